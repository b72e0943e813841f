import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { requireBody, requireContentType } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, problemResponses } from "../http/schemas";
import { DETOKENIZE_REQUEST_EXAMPLE, DETOKENIZED_EXAMPLE } from "../tokens/examples";
import { detokenizeBody } from "./service";

const DetokenizePayload = z
  .any()
  .refine((payload) => payload !== undefined, "is required")
  .openapi("DetokenizePayload", {
    description:
      "Any JSON. Every `{{ <token id> }}` or `{{ <token id> | <filters> }}` in its strings is replaced by the token's data. " +
      "In an object's `tokens` array, an entry that is a token id or `{{ token: <token id> }}` is replaced by the token: " +
      "{id, type, tenant_id, data, containers, metadata, expires_at, created_by, created_at, modified_by, modified_at}, " +
      "its data per the caller's token:use rule. At most 100 references in all.",
  });

const detokenize = createRoute({
  method: "post",
  path: "/detokenize",
  tags: ["Tokens"],
  security: [{ ApiKey: [] }],
  summary: "Detokenize every expression in a JSON payload, with the caller's token:use",
  description:
    "Answers what a proxy would forward: a string that is exactly one expression becomes the token's value (an object stays an object), " +
    "inside longer text the value is inserted as text. Needs token:use on every container of each token; a rule that redacts it is a 403, " +
    "an unknown or expired token a 400.",
  middleware: [requirePermission("token:use"), requireContentType("application/json"), requireBody] as const,
  request: jsonBody(DetokenizePayload, DETOKENIZE_REQUEST_EXAMPLE),
  responses: {
    200: jsonContent(DetokenizePayload, "The payload with each expression replaced by its result", DETOKENIZED_EXAMPLE),
    ...problemResponses(400, 401, 403, 413, 415),
  },
});

/** `POST /detokenize`: the detokenization of a proxy body, answered to the caller instead of forwarded. */
export const detokenizeRoutes = createRouter().openapi(detokenize, async (c) =>
  c.json(await detokenizeBody(c.var.context, c.var.principal, c.req.valid("json")), 200),
);
