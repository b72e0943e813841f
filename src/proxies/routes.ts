import { createRoute } from "@hono/zod-openapi";
import { idempotent } from "../http/idempotency";
import { requireContentType, requirePermission } from "../http/middleware";
import { createRouter } from "../http/router";
import {
  IdParams,
  jsonBody,
  jsonContent,
  mergePatchBody,
  NameFilter,
  PageQuery,
  paginated,
  problemResponses,
  repeatable,
  Uuid,
} from "../http/schemas";
import { ProxyBody, ProxyPatchBody, ProxySchema } from "./schema";
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
  request: jsonBody(ProxyBody),
  responses: { 201: jsonContent(ProxySchema, "The proxy"), ...problemResponses(400, 401, 403, 409, 413, 415) },
});

const list = createRoute({
  method: "get",
  path: "/proxies",
  tags,
  security,
  summary: "List proxies",
  middleware: [requirePermission("proxy:read")] as const,
  request: { query: PageQuery.extend({ id: repeatable(Uuid), name: NameFilter }) },
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
  summary: "Change some fields of a proxy (JSON merge patch)",
  middleware: [requirePermission("proxy:update"), requireContentType("application/merge-patch+json")] as const,
  request: { params: IdParams, ...mergePatchBody(ProxyPatchBody) },
  responses: { 200: jsonContent(ProxySchema, "The proxy"), ...problemResponses(400, 401, 403, 404, 413, 415) },
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

export const proxyRoutes = createRouter()
  .openapi(create, async (c) => c.json(await proxies.createProxy(c.env, c.var.principal, c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await proxies.listProxies(c.env, c.var.principal, c.req.valid("query")), 200))
  .openapi(get, async (c) => c.json(await proxies.getProxy(c.env, c.var.principal, c.req.valid("param").id), 200))
  .openapi(update, async (c) =>
    c.json(await proxies.replaceProxy(c.env, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(patch, async (c) =>
    c.json(await proxies.patchProxy(c.env, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(remove, async (c) => {
    await proxies.deleteProxy(c.env, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  });
