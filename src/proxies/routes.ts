import { createRoute, z } from "@hono/zod-openapi";
import { idempotent } from "../http/idempotency";
import { limitBody, optionalJson, requireContentType, requirePermission } from "../http/middleware";
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
import { INVOCATION_PATH } from "./destination";
import { proxyErrorResponse } from "./errors";
import { invokeProxy } from "./invocation";
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
  middleware: [requirePermission("proxy:create"), json, idempotent] as const,
  request: jsonBody(ProxyBody, {
    name: "Payments partner",
    destination_url: "https://api.partner.example/charges",
    request_transform: {
      code: 'module.exports = async function (req) {\n  return { headers: { ...req.args.headers, authorization: "Bearer " + req.configuration.PARTNER_TOKEN }, body: req.args.body };\n};',
    },
    configuration: { PARTNER_TOKEN: "partner-secret" },
    require_auth: true,
  }),
  responses: { 201: jsonContent(ProxySchema, "The proxy"), ...problemResponses(400, 401, 403, 409, 413, 415, 503) },
});

const list = createRoute({
  method: "get",
  path: "/proxies",
  tags,
  security,
  summary: "List proxies",
  middleware: [requirePermission("proxy:read")] as const,
  request: { query: ListQuery },
  responses: { 200: jsonContent(paginated(ProxySchema), "A page of proxies"), ...problemResponses(400, 401, 403) },
});

const get = createRoute({
  method: "get",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Get a proxy",
  middleware: [requirePermission("proxy:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(ProxySchema, "The proxy"), ...problemResponses(400, 401, 403, 404) },
});

const update = createRoute({
  method: "put",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Replace a proxy (its key stays)",
  middleware: [requirePermission("proxy:update"), json] as const,
  request: { params: IdParams, ...jsonBody(ProxyBody) },
  responses: { 200: jsonContent(ProxySchema, "The proxy"), ...problemResponses(400, 401, 403, 404, 413, 415) },
});

const patch = createRoute({
  method: "patch",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Change some fields of a proxy (JSON merge patch); answers 204 like the original interface",
  middleware: [requirePermission("proxy:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: IdParams, ...mergePatchBody(ProxyPatchBody) },
  responses: { 204: { description: "Patched" }, ...problemResponses(400, 401, 403, 404, 413, 415) },
});

const remove = createRoute({
  method: "delete",
  path: "/proxies/{id}",
  tags,
  security,
  summary: "Delete a proxy; its key stops working at once",
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
    "Answers the proxy with its new key. With `grace_period_seconds` (up to 30 days) the previous key keeps invoking the " +
    "proxy until then; without, it stops with the next request.",
  middleware: [requirePermission("proxy:update"), optionalJson(), idempotent] as const,
  request: { params: IdParams, ...optionalJsonBody(RollKeyBody) },
  responses: { 200: jsonContent(ProxySchema, "The proxy, with its new key"), ...problemResponses(400, 401, 403, 404, 409, 415, 503) },
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
  example: {
    proxy_error: {
      type: "about:blank",
      title: "Not Found",
      status: 404,
      detail: "Token 0c2d7b0e-6f4c-4d8e-9a55-3f1f0b6d2a11 was not found",
    },
  },
});

/**
 * Invocation does its own authentication (the proxy key, then `{P}-API-KEY` when the proxy requires
 * it; an ephemeral proxy needs `{P}-API-KEY`), so it is mounted outside the authenticated API; every
 * failure answers as `proxy_error`.
 */
export const proxyInvocationRoutes = createRouter();
proxyInvocationRoutes.onError(proxyErrorResponse);
// Every method reaches the pipeline, so that an unsupported one is refused as proxy_error too.
proxyInvocationRoutes.on(
  ["ALL"],
  [INVOCATION_PATH, `${INVOCATION_PATH}/*`],
  // Proxied bodies are read whole (to detokenize them), so they are bounded like the API's.
  limitBody,
  (c) => invokeProxy(c.var.request, c.req.raw),
);
for (const method of HTTP_METHODS) {
  proxyInvocationRoutes.openAPIRegistry.registerPath({
    method: method.toLowerCase() as Lowercase<typeof method>,
    path: `${INVOCATION_PATH}/{path}`,
    tags: ["Proxy invocation"],
    summary: "Invoke a proxy: the request is detokenized, transformed and forwarded to its destination",
    description:
      "The proxy is chosen by the SVC-PROXY-KEY header or the svc-proxy-key query parameter. Without a proxy key, the " +
      "SVC-PROXY-URL header with SVC-API-KEY (token:use) makes an ephemeral proxy to that URL (when the deployment " +
      "enables it). `{path}` (optional, any depth) and the query string are appended to the destination URL. The " +
      "destination's response is returned as it is.",
    request: { params: z.object({ path: z.string().openapi({ description: "Optional sub-path, any depth" }) }) },
    responses: {
      default: { description: "The destination's response, unchanged" },
      "4XX": { description: "A failure inside the vault", content: { "application/json": { schema: ProxyErrorSchema } } },
      "5XX": { description: "A failure inside the vault", content: { "application/json": { schema: ProxyErrorSchema } } },
    },
  });
}
