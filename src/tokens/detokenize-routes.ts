import { createRoute, z } from "@hono/zod-openapi";
import { requireBody, requireContentType, requirePermission } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, problemResponses } from "../http/schemas";
import { detokenizeJson } from "./detokenize";

const DetokenizePayload = z
  .any()
  .refine((payload) => payload !== undefined, "is required")
  .openapi("DetokenizePayload", {
    description:
      "Any JSON. Every `{{ <token id> }}` or `{{ <token id> | <filters> }}` in its strings is replaced by the token's data " +
      "(at most 100 expressions).",
  });

const detokenize = createRoute({
  method: "post",
  path: "/detokenize",
  tags: ["Tokens"],
  security: [{ ApiKey: [] }],
  summary: "Detokenize every expression in a JSON payload, with the caller's token:use",
  middleware: [requirePermission("token:use"), requireContentType("application/json"), requireBody] as const,
  request: jsonBody(DetokenizePayload),
  responses: {
    200: jsonContent(DetokenizePayload, "The payload with each expression replaced by its result"),
    ...problemResponses(400, 401, 403, 413, 415),
  },
});

/** `POST /detokenize`: the detokenization of a proxy body, answered to the caller instead of forwarded. */
export const detokenizeRoutes = createRouter().openapi(detokenize, async (c) =>
  c.json(await detokenizeJson(c.var.context, c.var.principal, c.req.valid("json")), 200),
);
