import { createRoute } from "@hono/zod-openapi";
import { idempotent } from "../http/idempotency";
import { requireBody, requireContentType, requirePermission, staleReadsAllowed } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, mergePatchBody, paginated, problemResponses } from "../http/schemas";
import {
  CreatedTokenSchema,
  CreateTokenBody,
  ListTokensQuery,
  TokenIdParams,
  TokenizePayload,
  TokenSchema,
  UpdatedTokenSchema,
  UpdateTokenBody,
} from "./schema";
import * as tokens from "./service";

const tags = ["Tokens"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");

const create = createRoute({
  method: "post",
  path: "/tokens",
  tags,
  security,
  summary: "Create a token",
  middleware: [requirePermission("token:create"), json, idempotent] as const,
  request: jsonBody(CreateTokenBody, {
    type: "card",
    data: { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" },
    metadata: { customer_id: "c-1042" },
    deduplicate_token: true,
  }),
  responses: {
    // As a caller whose rule masks /pci/ sees it: the cvc is never shown, the number is masked.
    201: jsonContent(CreatedTokenSchema, "The new token, its data per the caller's access transform", {
      id: "0c2d7b0e-6f4c-4d8e-9a55-3f1f0b6d2a11",
      type: "card",
      tenant_id: "7d3f0a9e-1b2c-4d5e-8f90-a1b2c3d4e5f6",
      data: { number: "XXXXXXXXXXXX4242", expiration_month: 12, expiration_year: 2030 },
      fingerprint: "WfHV8pOE4djBWKwpnHSO3BylEWZgmrVOwQSO-m5DtZY",
      containers: ["/pci/high/"],
      metadata: { customer_id: "c-1042" },
      search_indexes: [],
      fingerprint_expression: "{{ data.number }}",
      mask: {
        number: "{{ data.number | reveal_last: 4 }}",
        expiration_month: "{{ data.expiration_month }}",
        expiration_year: "{{ data.expiration_year }}",
      },
      expires_at: null,
      created_by: "5b8c1e2a-3d4f-4a6b-9c7d-8e9f0a1b2c3d",
      created_at: "2026-11-23T12:00:00.000Z",
      modified_by: "5b8c1e2a-3d4f-4a6b-9c7d-8e9f0a1b2c3d",
      modified_at: "2026-11-23T12:00:00.000Z",
      deduplicated: false,
    }),
    200: jsonContent(CreatedTokenSchema, "An existing token with the same type and fingerprint (deduplicate_token)"),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const list = createRoute({
  method: "get",
  path: "/tokens",
  tags,
  security,
  summary: "List tokens",
  description:
    "Newest first, among the containers where the caller holds token:read, with data per its access transform. " +
    "Filters: `id` and `type` (repeatable), and `metadata.<key>=<value>` (case-insensitive exact match; several are ANDed).",
  middleware: [requirePermission("token:read"), staleReadsAllowed] as const,
  request: { query: ListTokensQuery },
  responses: { 200: jsonContent(paginated(TokenSchema), "A page of tokens, newest first"), ...problemResponses(400, 401, 403) },
});

const get = createRoute({
  method: "get",
  path: "/tokens/{id}",
  tags,
  security,
  summary: "Get a token",
  middleware: [requirePermission("token:read"), staleReadsAllowed] as const,
  request: { params: TokenIdParams },
  responses: { 200: jsonContent(TokenSchema, "The token"), ...problemResponses(400, 401, 403, 404) },
});

const update = createRoute({
  method: "patch",
  path: "/tokens/{id}",
  tags,
  security,
  summary: "Update a token with a JSON merge patch",
  middleware: [requirePermission("token:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: TokenIdParams, ...mergePatchBody(UpdateTokenBody) },
  responses: {
    200: jsonContent(UpdatedTokenSchema, "The updated token, or the token it duplicates (deduplicate_token)"),
    ...problemResponses(400, 401, 403, 404, 409, 415, 503),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/tokens/{id}",
  tags,
  security,
  summary: "Delete a token, its ciphertext and its indexes",
  middleware: [requirePermission("token:delete")] as const,
  request: { params: TokenIdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404, 503) },
});

const tokenize = createRoute({
  method: "post",
  path: "/tokenize",
  tags,
  security,
  summary: "Tokenize every value of a JSON payload, all or nothing (at most 100 tokens)",
  middleware: [requirePermission("token:create"), json, requireBody, idempotent] as const,
  request: jsonBody(TokenizePayload, {
    first_name: "Ada",
    ssn: { type: "social_security_number", data: "123-45-6789" },
    cards: [{ type: "card_number", data: "4242424242424242" }],
  }),
  responses: {
    201: jsonContent(TokenizePayload, "The payload with each primitive leaf replaced by its token's id, each create request by its token"),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

export const tokenRoutes = createRouter()
  .openapi(create, async (c) => {
    const token = await tokens.createToken(c.var.context, c.var.principal, c.req.valid("json"));
    return c.json(token, token.deduplicated ? 200 : 201);
  })
  .openapi(list, async (c) => c.json(await tokens.listTokens(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(get, async (c) => c.json(await tokens.getToken(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(update, async (c) =>
    c.json(await tokens.updateToken(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(remove, async (c) => {
    await tokens.deleteToken(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(tokenize, async (c) => c.json(await tokens.tokenize(c.var.context, c.var.principal, c.req.valid("json")), 201));
