import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { examplePage } from "../http/examples";
import { optionalJson, requireContentType } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER, PROXY_INVOCATION_SECURITY, PROXY_URL_HEADER } from "../http/openapi-document";
import { createRouter, HTTP_METHODS } from "../http/router";
import {
  IdParams,
  jsonBody,
  jsonContent,
  ListQuery,
  mergePatchBody,
  optionalJsonBody,
  ProblemSchema,
  paginated,
  problemResponses,
} from "../http/schemas";
import { idempotentControlWrite } from "../idempotency/middleware";
import { CARD_CHARGE_EXAMPLE } from "../tokens/examples";
import { INVOCATION_PATH } from "./destination";
import {
  PROXY_ERROR_EXAMPLE,
  PROXY_EXAMPLE,
  PROXY_PATCH_EXAMPLE,
  PROXY_REPLACEMENT_EXAMPLE,
  PROXY_REQUEST_EXAMPLE,
  REPLACED_PROXY_EXAMPLE,
  ROLL_KEY_EXAMPLE,
  ROLLED_PROXY_EXAMPLE,
} from "./examples";
import { ProxyBody, ProxyPatchBody, ProxySchema, RollKeyBody } from "./schema";
import * as proxies from "./service";

const tags = ["Proxies"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");

const create = createRoute({
  method: "post",
  path: "/proxies",
  tags,
  security,
  summary: "Create a proxy; the vault generates its key",
  description:
    "Stores a proxy that detokenizes requests, runs its optional transforms and forwards them to `destination_url`. Needs " +
    "`proxy:create`; the destination must pass the egress policy and transform code must pass the sandbox's checks. The " +
    "answer holds the `key` that invokes the proxy at /proxy, and the configuration as sent (it is stored encrypted).",
  middleware: [requirePermission("proxy:create"), json, idempotentControlWrite(proxies.answerCommittedCreate)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(ProxyBody, PROXY_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(ProxySchema, "The proxy", PROXY_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const list = createRoute({
  method: "get",
  path: "/proxies",
  tags,
  security,
  summary: "List proxies",
  description:
    "Answers the tenant's proxies a page at a time, each with its key and decrypted configuration. Needs `proxy:read`; " +
    "`id` (repeatable) and `name` (`*` is the only wildcard, case-insensitive) narrow the list.",
  middleware: [requirePermission("proxy:read")] as const,
  request: { query: ListQuery },
  responses: {
    200: jsonContent(paginated(ProxySchema), "A page of proxies", examplePage(PROXY_EXAMPLE)),
    ...problemResponses(400, 401, 403),
  },
});

const get = createRoute({
  method: "get",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Get a proxy",
  description: "Answers the proxy with its key and decrypted configuration. Needs `proxy:read`; another tenant's proxy is a 404.",
  middleware: [requirePermission("proxy:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(ProxySchema, "The proxy", PROXY_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const update = createRoute({
  method: "put",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Replace a proxy (its key stays)",
  description:
    "Replaces every field with the body, checked as on creation: a member left out takes its default (no transform, no " +
    "application, no configuration, `require_auth` true). Needs `proxy:update`; the key keeps working, and another " +
    "tenant's proxy is a 404.",
  middleware: [requirePermission("proxy:update"), json] as const,
  request: { params: IdParams, ...jsonBody(ProxyBody, PROXY_REPLACEMENT_EXAMPLE) },
  responses: {
    200: jsonContent(ProxySchema, "The proxy", REPLACED_PROXY_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 413, 415),
  },
});

const patch = createRoute({
  method: "patch",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Change some fields of a proxy (JSON merge patch); answers 204 like the original interface",
  description:
    "A member left out stays, null removes an optional member, and `configuration` merges entry by entry (an entry set " +
    "to null is removed); the result is checked as a whole proxy. Needs `proxy:update`; the key keeps working, and " +
    "another tenant's proxy is a 404.",
  middleware: [requirePermission("proxy:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: IdParams, ...mergePatchBody(ProxyPatchBody, PROXY_PATCH_EXAMPLE) },
  responses: { 204: { description: "Patched" }, ...problemResponses(400, 401, 403, 404, 413, 415) },
});

const remove = createRoute({
  method: "delete",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Delete a proxy; its key stops working at once",
  description:
    "Deletes the proxy and with it its transforms; other isolates may still accept its key for up to " +
    "CREDENTIAL_CACHE_TTL_MS. Needs `proxy:delete`; another tenant's proxy is a 404.",
  middleware: [requirePermission("proxy:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

const rollKey = createRoute({
  method: "post",
  path: "/proxies/{id}/key",
  tags,
  security,
  summary: "Give a proxy a new key; the previous one works for an optional grace period",
  description:
    "Answers the proxy with its new key; needs `proxy:update`. With `grace_period_seconds` (up to 30 days) the previous " +
    "key keeps invoking the proxy until then; without, it stops with the next request. Only the latest previous key is " +
    "kept, and a roll racing another roll of the same proxy is a 409.",
  middleware: [requirePermission("proxy:update"), optionalJson(), idempotentControlWrite(proxies.answerCommittedRoll)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: { params: IdParams, ...optionalJsonBody(RollKeyBody, ROLL_KEY_EXAMPLE) },
  responses: {
    200: jsonContent(ProxySchema, "The proxy, with its new key", ROLLED_PROXY_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 415, 503),
  },
});

export const proxyRoutes = createRouter()
  .openapi(create, async (c) => c.json(await proxies.createProxy(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await proxies.listProxies(c.var.context, c.var.principal, c.req.valid("query")), 200))
  .openapi(get, async (c) => c.json(await proxies.getProxy(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(update, async (c) =>
    c.json(await proxies.replaceProxy(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(patch, async (c) => {
    await proxies.patchProxy(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json"));
    return c.body(null, 204);
  })
  .openapi(rollKey, async (c) =>
    c.json(await proxies.rollProxyKey(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(remove, async (c) => {
    await proxies.deleteProxy(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  });

const ProxyErrorSchema = z.object({ proxy_error: ProblemSchema }).openapi("ProxyError", {
  description: "A failure inside the vault (not the destination's answer, which is returned as it is)",
  example: PROXY_ERROR_EXAMPLE,
});

const ProxiedBody = z.unknown().openapi({
  description:
    "Any content type is forwarded. In JSON, form and text bodies, `{{ <token id> }}` and `{{ <token id> | filter: args }}` " +
    "expressions are replaced by the token's data first (docs/tokens.md, Detokenization).",
});

/** Answered once the destination has answered, on the destination's answer and on a failure after it. */
const DESTINATION_STATUS_HEADER = {
  "SVC-PROXY-DESTINATION-STATUS": {
    description:
      "The status the destination answered. Absent when the request never reached the destination (the vault refused or failed it first)",
    schema: { type: "integer" as const },
  },
};

/** GET bodies are dropped; DELETE bodies are forwarded but unusual enough to leave undocumented. */
const METHODS_WITH_BODY: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH"]);

/**
 * Invocation is answered outside this router (src/index.ts sends every `/proxy` call to
 * answerProxyCall, src/runtime/proxy-calls.ts): it does its own authentication (the proxy key, then
 * `{P}-API-KEY` when the proxy requires it; an ephemeral proxy needs `{P}-API-KEY`), and every failure
 * answers as `proxy_error`. The router only documents it.
 */
export const proxyInvocationRoutes = createRouter();
for (const method of HTTP_METHODS) {
  proxyInvocationRoutes.openAPIRegistry.registerPath({
    method: method.toLowerCase() as Lowercase<typeof method>,
    path: `${INVOCATION_PATH}/{path}`,
    tags: ["Proxy invocation"],
    security: PROXY_INVOCATION_SECURITY,
    parameters: [PROXY_URL_HEADER],
    summary: "Invoke a proxy: the request is detokenized, transformed and forwarded to its destination",
    description:
      "The proxy is chosen by the SVC-PROXY-KEY header or the svc-proxy-key query parameter. Without a proxy key, the " +
      "SVC-PROXY-URL header with SVC-API-KEY (token:use) makes an ephemeral proxy to that URL (when the deployment " +
      "enables it). `{path}` (optional, any depth) and the query string are appended to the destination URL. The " +
      "destination's response is returned as it is, with the status it answered in SVC-PROXY-DESTINATION-STATUS; that " +
      "header is also on a proxy_error given after the destination answered (a response transform that failed), and " +
      "on no answer the destination did not reach.",
    request: {
      params: z.object({ path: z.string().openapi({ description: "Optional sub-path, any depth" }) }),
      ...(METHODS_WITH_BODY.has(method) ? optionalJsonBody(ProxiedBody, CARD_CHARGE_EXAMPLE) : {}),
    },
    responses: {
      default: { description: "The destination's response, unchanged", headers: DESTINATION_STATUS_HEADER },
      429: {
        description:
          "Too many calls with the caller's API key, or with the proxy key from this address when the proxy is called " +
          "anonymously: nothing was forwarded; retry after Retry-After",
        content: { "application/json": { schema: ProxyErrorSchema } },
      },
      "4XX": {
        description: "A failure inside the vault",
        headers: DESTINATION_STATUS_HEADER,
        content: { "application/json": { schema: ProxyErrorSchema } },
      },
      "5XX": {
        description: "A failure inside the vault",
        headers: DESTINATION_STATUS_HEADER,
        content: { "application/json": { schema: ProxyErrorSchema } },
      },
    },
  });
}
