import { createRoute } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requirePermission } from "../auth/middleware";
import type { AppEnv } from "../http/context";
import { examplePage } from "../http/examples";
import { requireContentType, staleReadsAllowed } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, paginated, problemResponses } from "../http/schemas";
import { TokenSchema } from "../tokens/schema";
import { SEARCH_REQUEST_EXAMPLE, SEARCHED_TOKEN_EXAMPLE } from "./examples";
import { SearchTokensBody } from "./schema";
import { searchTokens } from "./service";

/** `Server-Timing: search;dur=…`: time spent inside the worker, next to what the client measures. */
const timeSearch: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = performance.now();
  await next();
  c.res.headers.set("Server-Timing", `search;dur=${(performance.now() - started).toFixed(2)}`);
};

const search = createRoute({
  method: "post",
  path: "/tokens/search",
  tags: ["Tokens"],
  security: [{ ApiKey: [] }],
  summary: "Search tokens with a Lucene-style query",
  description:
    "Terms `field:value` joined by AND, OR, NOT (also `!`, `-`) and grouped with parentheses; fields id, type, " +
    "fingerprint, data, container, metadata.<key>, created_by, created_at, modified_by, modified_at. Results are " +
    "newest first, limited to the containers where the caller holds token:search, with data per its access transform.",
  middleware: [requirePermission("token:search"), requireContentType("application/json"), staleReadsAllowed, timeSearch] as const,
  request: jsonBody(SearchTokensBody, SEARCH_REQUEST_EXAMPLE),
  responses: {
    200: jsonContent(paginated(TokenSchema), "A page of tokens, newest first", examplePage(SEARCHED_TOKEN_EXAMPLE)),
    ...problemResponses(400, 401, 403, 413, 415),
  },
});

export const searchRoutes = createRouter().openapi(search, async (c) =>
  c.json(await searchTokens(c.var.context, c.var.principal, c.req.valid("json")), 200),
);
