import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { examplePage } from "../http/examples";
import { requireContentType } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER } from "../http/openapi-document";
import { createRouter } from "../http/router";
import {
  IdParams,
  jsonBody,
  jsonContent,
  ListQuery,
  mergePatchBody,
  NameFilter,
  PageQuery,
  paginated,
  problemResponses,
} from "../http/schemas";
import { type AnswerCommitted, idempotent, idempotentControlWrite, idempotentWrite } from "../idempotency/middleware";
import {
  FORMULA_EXAMPLE,
  FORMULA_REPLACEMENT_EXAMPLE,
  FORMULA_REQUEST_EXAMPLE,
  REACT_REQUEST_EXAMPLE,
  REACT_RESULT_EXAMPLE,
  REACTION_ACCEPTED_EXAMPLE,
  REACTION_RESULT_EXAMPLE,
  REACTOR_EXAMPLE,
  REACTOR_PATCH_EXAMPLE,
  REACTOR_REPLACEMENT_EXAMPLE,
  REACTOR_REQUEST_EXAMPLE,
  REPLACED_FORMULA_EXAMPLE,
  REPLACED_REACTOR_EXAMPLE,
} from "./examples";
import * as formulas from "./formulas";
import * as reactions from "./reactions";
import {
  FormulaBody,
  FormulaSchema,
  ReactBody,
  ReactionAcceptedSchema,
  ReactionParams,
  ReactionResultSchema,
  ReactorBody,
  ReactorPatchBody,
  ReactorReplacementBody,
  ReactorSchema,
  ReactResultSchema,
} from "./schema";
import * as reactors from "./service";

const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");
const formulaTags = ["Reactor formulas"];
const reactorTags = ["Reactors"];

const createFormula = createRoute({
  method: "post",
  path: "/reactor-formulas",
  tags: formulaTags,
  security,
  summary: "Create a private reactor formula; its code is checked by the sandbox",
  description:
    "Stores code for reactors to run, with the configuration each reactor must supply and the request parameters " +
    "`react` args are checked against. Needs `reactor:create`; code that does not parse is a 400 with its line and " +
    "column, and `type: official` is a 403 (official formulas belong to the service).",
  middleware: [requirePermission("reactor:create"), json, idempotentControlWrite(formulas.answerCommittedCreate)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(FormulaBody, FORMULA_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(FormulaSchema, "The formula", FORMULA_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const listFormulas = createRoute({
  method: "get",
  path: "/reactor-formulas",
  tags: formulaTags,
  security,
  summary: "List the official reactor formulas and the tenant's own",
  description:
    "Answers the formulas a page at a time, official ones first, then the tenant's own. Needs `reactor:read`; `name` " +
    "(`*` is the only wildcard, case-insensitive) narrows the list.",
  middleware: [requirePermission("reactor:read")] as const,
  request: { query: PageQuery.extend({ name: NameFilter }) },
  responses: {
    200: jsonContent(paginated(FormulaSchema), "A page of formulas", examplePage(FORMULA_EXAMPLE)),
    ...problemResponses(400, 401, 403),
  },
});

const getFormula = createRoute({
  method: "get",
  path: "/reactor-formulas/{id}",
  tags: formulaTags,
  security,
  summary: "Get a reactor formula (official or the tenant's own)",
  description: "Answers the formula with its code and contract. Needs `reactor:read`; another tenant's private formula is a 404.",
  middleware: [requirePermission("reactor:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(FormulaSchema, "The formula", FORMULA_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const updateFormula = createRoute({
  method: "put",
  path: "/reactor-formulas/{id}",
  tags: formulaTags,
  security,
  summary: "Replace a private reactor formula; refused (409) if its reactors' configuration would no longer satisfy it",
  description:
    "Replaces every field with the body, the code checked by the sandbox as on creation; the 409 names each reactor " +
    "that would break and what it lacks. Needs `reactor:update`; an official formula is a 403, another tenant's a 404.",
  middleware: [requirePermission("reactor:update"), json] as const,
  request: { params: IdParams, ...jsonBody(FormulaBody, FORMULA_REPLACEMENT_EXAMPLE) },
  responses: {
    200: jsonContent(FormulaSchema, "The formula", REPLACED_FORMULA_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 413, 415),
  },
});

const deleteFormula = createRoute({
  method: "delete",
  path: "/reactor-formulas/{id}",
  tags: formulaTags,
  security,
  summary: "Delete a private reactor formula that no reactor uses",
  description:
    "Deletes the formula and with it its code; while reactors use it, the answer is a 409 naming them. Needs " +
    "`reactor:delete`; an official formula is a 403, another tenant's a 404.",
  middleware: [requirePermission("reactor:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404, 409) },
});

const createReactor = createRoute({
  method: "post",
  path: "/reactors",
  tags: reactorTags,
  security,
  summary: "Create a reactor with its own code, or from a formula",
  description:
    "A reactor runs exactly one of `code` (its own, checked by the sandbox like a formula's: 400 with line and column, at " +
    'most 50,000 characters; `runtime` may only be `{"image": "node-bt"}`) and `formula` (an official one or the tenant\'s ' +
    "own, not `coming_soon`). With code, the configuration is an object of strings; with a formula it must hold every " +
    'name the formula declares, of its type (converted only without loss: "123" to 123), and nothing else. It is stored ' +
    "encrypted. A member the vault does not keep is a 400. Needs `reactor:create`; `bt` and the `tokenize` output act as " +
    "the optional `application` (public or private).",
  middleware: [requirePermission("reactor:create"), json, idempotentControlWrite(reactors.answerCommittedCreate)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(ReactorBody, REACTOR_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(ReactorSchema, "The reactor", REACTOR_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const listReactors = createRoute({
  method: "get",
  path: "/reactors",
  tags: reactorTags,
  security,
  summary: "List reactors",
  description:
    "Answers the tenant's reactors a page at a time, each with its code (or formula), decrypted configuration and application. " +
    "Needs `reactor:read`; `id` (repeatable) and `name` (`*` is the only wildcard, case-insensitive) narrow the list.",
  middleware: [requirePermission("reactor:read")] as const,
  request: { query: ListQuery },
  responses: {
    200: jsonContent(paginated(ReactorSchema), "A page of reactors", examplePage(REACTOR_EXAMPLE)),
    ...problemResponses(400, 401, 403),
  },
});

const getReactor = createRoute({
  method: "get",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Get a reactor",
  description:
    "Answers the reactor with its code and runtime (or its formula), decrypted configuration and application (never the " +
    "application's keys; null once it was deleted). Needs `reactor:read`; another tenant's reactor is a 404.",
  middleware: [requirePermission("reactor:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(ReactorSchema, "The reactor", REACTOR_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const replaceReactor = createRoute({
  method: "put",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Replace a reactor (without formula and code it keeps what it runs)",
  description:
    "Replaces the name, what it runs (`code` or `formula`), configuration and application with the body, checked as on " +
    "creation (a member left out is removed; one the vault does not keep is a 400). Needs `reactor:update`; another " +
    "tenant's reactor is a 404, and a formula that changes during the save a 409.",
  middleware: [requirePermission("reactor:update"), json] as const,
  request: { params: IdParams, ...jsonBody(ReactorReplacementBody, REACTOR_REPLACEMENT_EXAMPLE) },
  responses: {
    200: jsonContent(ReactorSchema, "The reactor", REPLACED_REACTOR_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 413, 415),
  },
});

const patchReactor = createRoute({
  method: "patch",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Change some of a reactor's fields (JSON merge patch; null removes a configuration value or the application); answers 204",
  description:
    "A member left out stays, `configuration` merges name by name, and `code` or `formula` replaces what the reactor runs; " +
    "the merged reactor is checked as on creation. Needs `reactor:update`; another tenant's reactor is a 404.",
  middleware: [requirePermission("reactor:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: IdParams, ...mergePatchBody(ReactorPatchBody, REACTOR_PATCH_EXAMPLE) },
  responses: { 204: { description: "Patched" }, ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
});

const deleteReactor = createRoute({
  method: "delete",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Delete a reactor",
  description:
    "Deletes the reactor and its encrypted configuration; its formula stays. Needs `reactor:delete`; another tenant's " +
    "reactor is a 404.",
  middleware: [requirePermission("reactor:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

/**
 * The code may throw CustomHttpResponseError with any status, the vault's problem statuses
 * included: each documents the code's own body, in any media type, beside the problem.
 */
const orChosenByCode = (responses: ReturnType<typeof problemResponses>) =>
  Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      { ...response, content: { ...response.content, "*/*": { schema: z.unknown() } } },
    ]),
  );

const react = createRoute({
  method: "post",
  path: "/reactors/{id}/react",
  tags: reactorTags,
  security,
  summary: "Run the reactor's formula on args: {{ token_id }} references are detokenized with the caller's token:use",
  description:
    "Args are detokenized, checked against the formula's request parameters (lossless conversions) and handed to the " +
    "code with the reactor's configuration; `token:use` is needed even when nothing is detokenized, and `tokenize` output " +
    "is tokenized with the reactor's application, all or nothing. Typed errors thrown by the code keep their status; " +
    "CustomHttpResponseError answers with its own status, headers and body.",
  middleware: [requirePermission("token:use"), json, idempotent] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: { params: IdParams, ...jsonBody(ReactBody, REACT_REQUEST_EXAMPLE) },
  responses: {
    200: jsonContent(ReactResultSchema, "The code's raw output and the tokens made from its tokenize output", REACT_RESULT_EXAMPLE),
    ...orChosenByCode(problemResponses(400, 401, 403, 404, 409, 413, 415, 503)),
    default: {
      description: "The status, headers and body the code chose by throwing CustomHttpResponseError",
      content: { "*/*": { schema: z.unknown() } },
    },
  },
});

/** A retry of a react-async whose reaction was stored (with the claim's commit mark) but never answered: the same request id. */
const answerCommittedReaction: AnswerCommitted = async (context, _principal, outcome) => ({
  status: 202,
  body: await reactions.answerCommittedReaction(context, outcome),
});

const reactAsync = createRoute({
  method: "post",
  path: "/reactors/{id}/react-async",
  tags: reactorTags,
  security,
  summary: "Queue a reaction: answered at once with its request id, run on the reaction queue",
  description:
    "Checks the reaction as react does before its code runs (the reactor and its configuration; args detokenized with " +
    "the caller's `token:use`, needed even when nothing is detokenized, and checked against the request parameters), then " +
    "keeps it, its args encrypted, and queues it: 202 with `asyncReactorRequestId`. The code runs once, as react runs it; " +
    "GET /reactors/{id}/results/{request_id} answers its status and result for a day. With `{P}-IDEMPOTENCY-KEY`, a retry " +
    "answers the same request id and queues nothing. A tenant has at most 100 reactions waiting or running (429 beyond).",
  middleware: [requirePermission("token:use"), json, idempotentWrite(answerCommittedReaction)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: { params: IdParams, ...jsonBody(ReactBody, REACT_REQUEST_EXAMPLE) },
  responses: {
    202: jsonContent(ReactionAcceptedSchema, "The reaction is queued", REACTION_ACCEPTED_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 413, 415, 503),
  },
});

const reactionResult = createRoute({
  method: "get",
  path: "/reactors/{id}/results/{request_id}",
  tags: reactorTags,
  security,
  summary: "The status and result of an async reaction",
  description:
    "Answers pending, running, completed (`tokens` and `raw`, as react answers them) or failed (`error`, the problem react " +
    "would have answered). Needs `token:use`, and, when the reaction detokenized tokens, that the caller may use each of " +
    "them now as it was shown (403 otherwise). Another tenant's reaction, one of another reactor and one past its " +
    "retention (a day, or the deadline of a card cvc it detokenized) are a 404.",
  middleware: [requirePermission("token:use")] as const,
  request: { params: ReactionParams },
  responses: {
    200: jsonContent(ReactionResultSchema, "The reaction's status and result", REACTION_RESULT_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

export const reactorRoutes = createRouter()
  .openapi(createFormula, async (c) => c.json(await formulas.createFormula(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(listFormulas, async (c) => c.json(await formulas.listFormulas(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(getFormula, async (c) => c.json(await formulas.getFormula(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(updateFormula, async (c) =>
    c.json(await formulas.updateFormula(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(deleteFormula, async (c) => {
    await formulas.deleteFormula(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(createReactor, async (c) => c.json(await reactors.createReactor(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(listReactors, async (c) => c.json(await reactors.listReactors(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(getReactor, async (c) => c.json(await reactors.getReactor(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(replaceReactor, async (c) =>
    c.json(await reactors.replaceReactor(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(patchReactor, async (c) => {
    await reactors.patchReactor(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json"));
    return c.body(null, 204);
  })
  .openapi(deleteReactor, async (c) => {
    await reactors.deleteReactor(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(react, async (c) =>
    c.json(await reactors.react(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json").args), 200),
  )
  .openapi(reactAsync, async (c) =>
    c.json(await reactions.reactAsync(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json").args), 202),
  )
  .openapi(reactionResult, async (c) => {
    const { id, request_id } = c.req.valid("param");
    return c.json(await reactions.getReaction(c.var.context, c.var.principal, id, request_id), 200);
  });
