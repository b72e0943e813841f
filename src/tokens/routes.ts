import { createRoute } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requirePermission } from "../auth/middleware";
import { countKeyRequests } from "../auth/rate-limits";
import type { AppEnv } from "../http/context";
import { examplePage } from "../http/examples";
import { requireBody, requireContentType, staleReadsAllowed } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER } from "../http/openapi-document";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, mergePatchBody, paginated, problemResponses } from "../http/schemas";
import { type AnswerCommitted, idempotentWrite } from "../idempotency/middleware";
import { convertTokenIntent } from "../token-intents/conversion";
import { CreateOrConvertTokenBody } from "../token-intents/schema";
import * as creation from "./creation";
import {
  CARD_TOKEN_EXAMPLE,
  CARD_TOKEN_PATCH_EXAMPLE,
  CARD_TOKEN_REQUEST_EXAMPLE,
  CREATED_CARD_TOKEN_EXAMPLE,
  DEDUPLICATED_CARD_TOKEN_EXAMPLE,
  PATCHED_CARD_TOKEN_EXAMPLE,
  TOKENIZE_REQUEST_EXAMPLE,
  TOKENIZED_EXAMPLE,
} from "./examples";
import {
  CreatedTokenSchema,
  ListTokensQuery,
  TokenIdParams,
  TokenizePayload,
  TokenSchema,
  UpdatedTokenSchema,
  UpdateTokenBody,
} from "./schema";
import * as tokens from "./service";
import { findTokenRequests } from "./tokenize";
import { updateToken } from "./update";

const tags = ["Tokens"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");

/**
 * Every token a tokenize creates counts as a request (authentication counted the first), for every
 * key type: a tokenize of 100 values costs what 100 POST /tokens do, so batching buys no extra
 * guesses or writes. It runs before `idempotentWrite`, which would keep a 429 as the answer.
 */
const countCreatedTokens: MiddlewareHandler<AppEnv> = async (c, next) => {
  // Malformed JSON counts nothing here: the body validator answers it.
  const payload: unknown = await c.req.json().catch(() => null);
  const created = findTokenRequests(payload).length;
  if (created > 1) await countKeyRequests(c.var.request, c.var.principal, c.req.raw.headers, created - 1);
  await next();
};

/** A conversion of a token intent (POST /tokens with token_intent_id): its answer shows data the caller did not send. */
const isConversion = (body: unknown): boolean => typeof body === "object" && body !== null && "token_intent_id" in body;

/** POST /tokens answered again from its commit mark: as the attempt that wrote the token would have answered. */
const answerCommittedCreate: AnswerCommitted = async (context, principal, outcome, body) => {
  const token = await creation.answerCommittedToken(context, principal, outcome, !isConversion(body));
  return { status: token._extras.deduplicated ? 200 : 201, body: token };
};

/**
 * POST /tokens: the write carries the commit mark. A conversion is always answered again from it, as a
 * fresh request would be shown now, never from its saved answer: that shows the intent's card, which a
 * token deleted since, or a token:read rule narrowed since, would no longer show.
 */
const idempotentCreate = idempotentWrite(answerCommittedCreate, isConversion);

const answerCommittedTokenize: AnswerCommitted = async (context, principal, outcome, payload) => ({
  status: 201,
  body: await creation.answerCommittedTokenize(context, principal, outcome, payload),
});

const create = createRoute({
  method: "post",
  path: "/tokens",
  tags,
  security,
  summary: "Create a token",
  description:
    "Needs token:create on every container of the token; members left out take the type's defaults (container, fingerprint " +
    "expression, mask, search indexes). The answer shows the data as the caller's token:create transform does. With " +
    "`deduplicate_token`, the oldest live token of the same type and fingerprint where the caller holds token:create is answered instead, with 200 " +
    "and `_extras.deduplicated` true; " +
    "public and session keys may not send it (400), and are never shown a fingerprint. " +
    "With `token_intent_id` instead of `type` and `data`, a private key converts a token intent: the token gets the intent's type " +
    "and data (a card without its cvc) and the other members given, the intent is deleted with it, and the answer shows the token " +
    "as the caller's token:read rule would too. An unknown, expired, deleted, converted or another tenant's intent is a 404.",
  middleware: [requirePermission("token:create"), json, idempotentCreate] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(CreateOrConvertTokenBody, CARD_TOKEN_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(CreatedTokenSchema, "The new token, its data per the caller's access transform", CREATED_CARD_TOKEN_EXAMPLE),
    200: jsonContent(
      CreatedTokenSchema,
      "An existing token with the same type and fingerprint (deduplicate_token)",
      DEDUPLICATED_CARD_TOKEN_EXAMPLE,
    ),
    ...problemResponses(400, 401, 403, 404, 409, 413, 415, 503),
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
  responses: {
    200: jsonContent(paginated(TokenSchema), "A page of tokens, newest first", examplePage(CARD_TOKEN_EXAMPLE)),
    ...problemResponses(400, 401, 403),
  },
});

const get = createRoute({
  method: "get",
  path: "/tokens/{id}",
  tags,
  security,
  summary: "Get a token",
  description:
    "Needs token:read on one of the token's containers; its data follows that rule's transform. " +
    "An unknown or expired id, or another tenant's token, is a 404.",
  middleware: [requirePermission("token:read"), staleReadsAllowed] as const,
  request: { params: TokenIdParams },
  responses: { 200: jsonContent(TokenSchema, "The token", CARD_TOKEN_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const update = createRoute({
  method: "patch",
  path: "/tokens/{id}",
  tags,
  security,
  summary: "Update a token with a JSON merge patch",
  description:
    "`data` and `metadata` merge (RFC 7396: null removes a key); any other member replaces the stored one, or with null resets " +
    "it to the type's default. The result is validated as a new token and its fingerprint and search indexes recomputed; " +
    "it needs token:update on every container the token is in before and after. A public key updates only tokens its own " +
    "application created (any other id is a 403) and is answered the token's id, type, metadata and times. Public and session " +
    "keys may not send `deduplicate_token` (400).",
  middleware: [requirePermission("token:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: TokenIdParams, ...mergePatchBody(UpdateTokenBody, CARD_TOKEN_PATCH_EXAMPLE) },
  responses: {
    200: jsonContent(UpdatedTokenSchema, "The updated token, or the token it duplicates (deduplicate_token)", PATCHED_CARD_TOKEN_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 415, 503),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/tokens/{id}",
  tags,
  security,
  summary: "Delete a token, its ciphertext and its indexes",
  description:
    "Needs token:delete on every container of the token. The token can no longer be read, searched or detokenized; " +
    "an unknown id, or another tenant's token, is a 404.",
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
  description:
    "Needs token:create on every container of every token. An object with `type` and `data` is created as POST /tokens would " +
    "(deduplicate_token included); any other string, number or boolean becomes a `token`-type token, and null stays null. " +
    "When one value is refused, nothing is stored. Each token counts as one request against the key's rate limits.",
  middleware: [requirePermission("token:create"), json, requireBody, countCreatedTokens, idempotentWrite(answerCommittedTokenize)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(TokenizePayload, TOKENIZE_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(
      TokenizePayload,
      "The payload with each primitive leaf replaced by its token's id, each create request by its token",
      TOKENIZED_EXAMPLE,
    ),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

export const tokenRoutes = createRouter()
  .openapi(create, async (c) => {
    const body = c.req.valid("json");
    const token =
      "token_intent_id" in body
        ? await convertTokenIntent(c.var.context, c.var.principal, body)
        : await creation.createToken(c.var.context, c.var.principal, body);
    return c.json(token, token._extras.deduplicated ? 200 : 201);
  })
  .openapi(list, async (c) => c.json(await tokens.listTokens(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(get, async (c) => c.json(await tokens.getToken(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(update, async (c) =>
    c.json(await updateToken(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(remove, async (c) => {
    await tokens.deleteToken(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(tokenize, async (c) => c.json(await creation.tokenize(c.var.context, c.var.principal, c.req.valid("json")), 201));
