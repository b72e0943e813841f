import { createRoute, z } from "@hono/zod-openapi";
import { idempotent } from "../http/idempotency";
import { requireContentType, requirePermission } from "../http/middleware";
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
import * as formulas from "./formulas";
import {
  FormulaBody,
  FormulaSchema,
  ReactBody,
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
  middleware: [requirePermission("reactor:create"), json, idempotent] as const,
  request: jsonBody(FormulaBody, {
    name: "Charge a card",
    description: "Sends the card to the processor with the merchant's key",
    type: "private",
    code: "module.exports = async function (req) {\n  return { raw: { charged: req.args.card_number.slice(-4), merchant: req.configuration.MERCHANT_ID } };\n};",
    configuration: [{ name: "MERCHANT_ID", description: "The processor's merchant id", type: "string" }],
    request_parameters: [
      { name: "card_number", description: "A card number, or a reference to its token", type: "string", optional: false },
    ],
  }),
  responses: { 201: jsonContent(FormulaSchema, "The formula"), ...problemResponses(400, 401, 403, 409, 413, 415, 503) },
});

const listFormulas = createRoute({
  method: "get",
  path: "/reactor-formulas",
  tags: formulaTags,
  security,
  summary: "List the official reactor formulas and the tenant's own",
  middleware: [requirePermission("reactor:read")] as const,
  request: { query: PageQuery.extend({ name: NameFilter }) },
  responses: { 200: jsonContent(paginated(FormulaSchema), "A page of formulas"), ...problemResponses(400, 401, 403) },
});

const getFormula = createRoute({
  method: "get",
  path: "/reactor-formulas/{id}",
  tags: formulaTags,
  security,
  summary: "Get a reactor formula (official or the tenant's own)",
  middleware: [requirePermission("reactor:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(FormulaSchema, "The formula"), ...problemResponses(400, 401, 403, 404) },
});

const updateFormula = createRoute({
  method: "put",
  path: "/reactor-formulas/{id}",
  tags: formulaTags,
  security,
  summary: "Replace a private reactor formula; refused (409) if its reactors' configuration would no longer satisfy it",
  middleware: [requirePermission("reactor:update"), json] as const,
  request: { params: IdParams, ...jsonBody(FormulaBody) },
  responses: { 200: jsonContent(FormulaSchema, "The formula"), ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
});

const deleteFormula = createRoute({
  method: "delete",
  path: "/reactor-formulas/{id}",
  tags: formulaTags,
  security,
  summary: "Delete a private reactor formula that no reactor uses",
  middleware: [requirePermission("reactor:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404, 409) },
});

const createReactor = createRoute({
  method: "post",
  path: "/reactors",
  tags: reactorTags,
  security,
  summary: "Create a reactor from a formula; its configuration must satisfy the formula's contract",
  middleware: [requirePermission("reactor:create"), json, idempotent] as const,
  request: jsonBody(ReactorBody),
  responses: { 201: jsonContent(ReactorSchema, "The reactor"), ...problemResponses(400, 401, 403, 409, 413, 415, 503) },
});

const listReactors = createRoute({
  method: "get",
  path: "/reactors",
  tags: reactorTags,
  security,
  summary: "List reactors",
  middleware: [requirePermission("reactor:read")] as const,
  request: { query: ListQuery },
  responses: { 200: jsonContent(paginated(ReactorSchema), "A page of reactors"), ...problemResponses(400, 401, 403) },
});

const getReactor = createRoute({
  method: "get",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Get a reactor",
  middleware: [requirePermission("reactor:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(ReactorSchema, "The reactor"), ...problemResponses(400, 401, 403, 404) },
});

const replaceReactor = createRoute({
  method: "put",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Replace a reactor (without formula it keeps its own)",
  middleware: [requirePermission("reactor:update"), json] as const,
  request: { params: IdParams, ...jsonBody(ReactorReplacementBody) },
  responses: { 200: jsonContent(ReactorSchema, "The reactor"), ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
});

const patchReactor = createRoute({
  method: "patch",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Change some of a reactor's fields (JSON merge patch; null removes a configuration value or the application); answers 204",
  middleware: [requirePermission("reactor:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: IdParams, ...mergePatchBody(ReactorPatchBody) },
  responses: { 204: { description: "Patched" }, ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
});

const deleteReactor = createRoute({
  method: "delete",
  path: "/reactors/{id}",
  tags: reactorTags,
  security,
  summary: "Delete a reactor",
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
    "Args are detokenized, checked against the formula's request parameters (lossless conversions), and handed to the " +
    "code with the reactor's configuration; `tokenize` output is tokenized with the reactor's application, all or nothing. " +
    "Typed errors thrown by the code keep their status; CustomHttpResponseError answers with its own status, headers and body.",
  middleware: [requirePermission("token:use"), json, idempotent] as const,
  request: { params: IdParams, ...jsonBody(ReactBody) },
  responses: {
    200: jsonContent(ReactResultSchema, "The code's raw output and the tokens made from its tokenize output"),
    ...orChosenByCode(problemResponses(400, 401, 403, 404, 409, 413, 415, 503)),
    default: {
      description: "The status, headers and body the code chose by throwing CustomHttpResponseError",
      content: { "*/*": { schema: z.unknown() } },
    },
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
  );
