import { createRoute } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { requireContentType } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER } from "../http/openapi-document";
import { createRouter } from "../http/router";
import { IdParams, jsonBody, jsonContent, problemResponses } from "../http/schemas";
import { type AnswerCommitted, idempotentWrite } from "../idempotency/middleware";
import { CARD_INTENT_EXAMPLE, CARD_INTENT_REQUEST_EXAMPLE, CREATED_CARD_INTENT_EXAMPLE } from "./examples";
import { CreateTokenIntentBody, TokenIntentSchema } from "./schema";
import * as intents from "./service";

const tags = ["Token intents"];
const security = [{ ApiKey: [] }];

/** POST /token-intents answered again from its commit mark: as the attempt that wrote the intent would have answered. */
const answerCommittedCreate: AnswerCommitted = async (context, principal, outcome) => ({
  status: 201,
  body: await intents.answerCommittedIntent(context, principal, outcome),
});

const create = createRoute({
  method: "post",
  path: "/token-intents",
  tags,
  security,
  summary: "Create a token intent: data held encrypted for a day, until a private key converts it into a token",
  description:
    "Needs token-intent:create (public and private keys). Takes `type` and `data` only; the data follows its type's rules and is " +
    "at most 32 KiB as JSON. The answer never holds the data: a private key is shown the card's or bank account's facts and the " +
    "fingerprint as its token:create rule for the type's container shows them (the BIN under reveal only), a public key only the " +
    "intent's id, type and times. Convert it with POST /tokens {token_intent_id}; use it in " +
    "detokenization expressions as `{{ token_intent: <id> | json: '$.data.number' }}`.",
  middleware: [
    requirePermission("token-intent:create"),
    requireContentType("application/json"),
    idempotentWrite(answerCommittedCreate),
  ] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(CreateTokenIntentBody, CARD_INTENT_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(TokenIntentSchema, "The new token intent, without its data", CREATED_CARD_INTENT_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const get = createRoute({
  method: "get",
  path: "/token-intents/{id}",
  tags,
  security,
  summary: "Get a token intent (never its data)",
  description:
    "Needs token-intent:read, which only private keys hold. The facts and fingerprint are shown as the caller's token:read rule for " +
    "the type's container shows a token's data (the BIN under reveal only; nothing under redact or without a rule). An unknown, " +
    "expired, deleted, converted or another tenant's intent is a 404.",
  middleware: [requirePermission("token-intent:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(TokenIntentSchema, "The token intent", CARD_INTENT_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const remove = createRoute({
  method: "delete",
  path: "/token-intents/{id}",
  tags,
  security,
  summary: "Delete a token intent before it expires",
  description: "Needs token-intent:delete, which only private keys hold. An unknown or another tenant's intent is a 404.",
  middleware: [requirePermission("token-intent:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404, 503) },
});

export const tokenIntentRoutes = createRouter()
  .openapi(create, async (c) => c.json(await intents.createTokenIntent(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(get, async (c) => c.json(await intents.getTokenIntent(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(remove, async (c) => {
    await intents.deleteTokenIntent(c.var.context, c.req.valid("param").id);
    return c.body(null, 204);
  });
