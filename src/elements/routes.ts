import { Hono } from "hono";
import { NotFoundError } from "../errors";
import type { AppEnv } from "../http/context";
import { FRAME_PATH, frameAncestorsOf, frameHeaders } from "./frame";

/**
 * The elements' frame page, which wrangler.toml's [assets] run_worker_first sends here: the static page
 * from ASSETS, with the headers its key calls for (./frame.ts) and the deployment's HEADER_PREFIX
 * written into it, which names the header its frames send the key in. An HTML page, not an API
 * operation: it is outside the OpenAPI document, as /docs is.
 */
export const elementRoutes = new Hono<AppEnv>();

elementRoutes.get(FRAME_PATH, async (c) => {
  const ancestors = await frameAncestorsOf(c.var.request, c.req.query("key"), c.req.query("origin"));
  const page = await c.env.ASSETS.fetch(new URL(FRAME_PATH, c.req.url));
  if (!page.ok) throw new NotFoundError("The frame page (npm run build:elements)");
  const prefix = c.var.config.HEADER_PREFIX;
  const written = new HTMLRewriter()
    .on('meta[name="header-prefix"]', { element: (meta) => void meta.setAttribute("content", prefix) })
    .transform(page);
  return new Response(written.body, {
    headers: { "content-type": "text/html; charset=utf-8", ...frameHeaders(ancestors) },
  });
});
