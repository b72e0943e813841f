import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { examplePage } from "../http/examples";
import { optionalJson, requireContentType } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER } from "../http/openapi-document";
import { createRouter } from "../http/router";
import { IdParams, jsonBody, jsonContent, ListQuery, optionalJsonBody, paginated, problemResponses, Uuid } from "../http/schemas";
import { idempotentControlWrite } from "../idempotency/middleware";
import {
  APPLICATION_EXAMPLE,
  APPLICATION_KEYS_EXAMPLE,
  APPLICATION_REPLACEMENT_EXAMPLE,
  APPLICATION_REQUEST_EXAMPLE,
  CREATED_APPLICATION_EXAMPLE,
  NEW_KEY_EXAMPLE,
  NEW_KEY_REQUEST_EXAMPLE,
  REGENERATE_REQUEST_EXAMPLE,
  REGENERATED_APPLICATION_EXAMPLE,
  REPLACED_APPLICATION_EXAMPLE,
} from "./examples";
import {
  ApiKeyBody,
  ApplicationKeySchema,
  ApplicationSchema,
  CreateApplicationBody,
  CreatedApplicationSchema,
  NewApplicationSchema,
  UpdateApplicationBody,
} from "./schema";
import * as applications from "./service";

const tags = ["Applications"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");

const create = createRoute({
  method: "post",
  path: "/applications",
  tags,
  security,
  summary: "Create an application and its first API key (shown once)",
  description:
    "Needs application:create. Permissions must suit the type (public: token:create and token:update; private: the token " +
    "permissions; management: the others), given either plainly for every container or as rules per container, not both. " +
    "The answer holds the plaintext key, which is never shown again; with `create_key` false the application gets no key " +
    "(no `key`, and `keys` empty).",
  middleware: [requirePermission("application:create"), json, idempotentControlWrite(applications.answerCommittedCreate)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: jsonBody(CreateApplicationBody, APPLICATION_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(NewApplicationSchema, "The application, with its plaintext key", CREATED_APPLICATION_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const list = createRoute({
  method: "get",
  path: "/applications",
  tags,
  security,
  summary: "List applications",
  description:
    "Needs application:read. The tenant's applications, without their keys; filter by `id` (repeatable) or `name` (`*` is a wildcard).",
  middleware: [requirePermission("application:read")] as const,
  request: { query: ListQuery },
  responses: {
    200: jsonContent(paginated(ApplicationSchema), "A page of applications", examplePage(APPLICATION_EXAMPLE)),
    ...problemResponses(400, 401, 403),
  },
});

const getByKey = createRoute({
  method: "get",
  path: "/applications/key",
  tags,
  security,
  summary: "Get the application of the calling API key",
  description: "Any valid API key may read its own application (its permissions and rules, never its keys).",
  responses: { 200: jsonContent(ApplicationSchema, "The caller's application", APPLICATION_EXAMPLE), ...problemResponses(401) },
});

const get = createRoute({
  method: "get",
  path: "/applications/{id}",
  tags,
  security,
  summary: "Get an application",
  description: "Needs application:read. Its permissions and rules, never its keys; another tenant's application is a 404.",
  middleware: [requirePermission("application:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(ApplicationSchema, "The application", APPLICATION_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const update = createRoute({
  method: "put",
  path: "/applications/{id}",
  tags,
  security,
  summary: "Replace an application's name, permissions and rules",
  description:
    "Needs application:update. Permissions and rules left out become empty; `type` may be left out but not changed. " +
    "Its keys stay valid and the new grants apply from the next request. An expiring application (a session's) cannot be changed (409).",
  middleware: [requirePermission("application:update"), json] as const,
  request: { params: IdParams, ...jsonBody(UpdateApplicationBody, APPLICATION_REPLACEMENT_EXAMPLE) },
  responses: {
    200: jsonContent(ApplicationSchema, "The application", REPLACED_APPLICATION_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 415),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/applications/{id}",
  tags,
  security,
  summary: "Delete an application and revoke its keys",
  description:
    "Needs application:delete. Its keys stop working with the next request. An application cannot delete itself (409); " +
    "another tenant's application is a 404.",
  middleware: [requirePermission("application:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404, 409) },
});

const createKey = createRoute({
  method: "post",
  path: "/applications/{id}/keys",
  tags,
  security,
  summary: "Create another API key for the application (shown once)",
  description:
    "Needs application:create; the application's other keys keep working. An optional body `{expires_at}` makes the key stop " +
    "working (401) at that time. The plaintext key is in this answer only.",
  middleware: [requirePermission("application:create"), optionalJson(), idempotentControlWrite(applications.answerCommittedKey)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: { params: IdParams, ...optionalJsonBody(ApiKeyBody, NEW_KEY_REQUEST_EXAMPLE) },
  responses: {
    201: jsonContent(ApplicationKeySchema, "The new key", NEW_KEY_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 415, 503),
  },
});

const regenerateKey = createRoute({
  method: "post",
  path: "/applications/{id}/regenerate",
  tags,
  security,
  summary: "Replace all of the application's keys with one new key (shown once)",
  description:
    "Needs application:update. Every previous key of the application stops working with the next request. " +
    "An optional body `{expires_at}` makes the new key stop working (401) at that time.",
  middleware: [
    requirePermission("application:update"),
    optionalJson(),
    idempotentControlWrite(applications.answerCommittedRegenerate),
  ] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: { params: IdParams, ...optionalJsonBody(ApiKeyBody, REGENERATE_REQUEST_EXAMPLE) },
  responses: {
    200: jsonContent(CreatedApplicationSchema, "The application, with its new plaintext key", REGENERATED_APPLICATION_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 415, 503),
  },
});

const listKeys = createRoute({
  method: "get",
  path: "/applications/{id}/keys",
  tags,
  security,
  summary: "List the application's keys (never their plaintext)",
  description:
    "Needs application:read. An array (as the original interface's clients read it, not a page) of each key's id, creation " +
    "and expiry, newest first: the id is what revoking a key takes.",
  middleware: [requirePermission("application:read")] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(z.array(ApplicationKeySchema), "The keys", APPLICATION_KEYS_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

const KeyParams = IdParams.extend({ key_id: Uuid.openapi({ param: { name: "key_id", in: "path" } }) });

const getKey = createRoute({
  method: "get",
  path: "/applications/{id}/keys/{key_id}",
  tags,
  security,
  summary: "Get one of the application's keys (never its plaintext)",
  description: "Needs application:read. The key's id, creation and expiry; a key of another application, or of another tenant, is a 404.",
  middleware: [requirePermission("application:read")] as const,
  request: { params: KeyParams },
  responses: {
    200: jsonContent(ApplicationKeySchema, "The key", APPLICATION_KEYS_EXAMPLE[0]),
    ...problemResponses(400, 401, 403, 404),
  },
});

const revokeKey = createRoute({
  method: "delete",
  path: "/applications/{id}/keys/{key_id}",
  tags,
  security,
  summary: "Revoke a key; it stops working with the next request",
  description: "Needs application:delete. The application and its other keys are left as they are; a key of another application is a 404.",
  middleware: [requirePermission("application:delete")] as const,
  request: { params: KeyParams },
  responses: { 204: { description: "Revoked" }, ...problemResponses(400, 401, 403, 404) },
});

export const applicationRoutes = createRouter()
  .openapi(create, async (c) => c.json(await applications.createApplication(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await applications.listApplications(c.var.context, c.var.principal, c.req.valid("query")), 200))
  // Before /applications/{id}, which would refuse "key" as an id.
  .openapi(getByKey, async (c) =>
    c.json(await applications.getApplication(c.var.context, c.var.principal, c.var.principal.applicationId), 200),
  )
  .openapi(get, async (c) => c.json(await applications.getApplication(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(update, async (c) =>
    c.json(await applications.updateApplication(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(remove, async (c) => {
    await applications.deleteApplication(c.var.context, c.var.principal, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(createKey, async (c) =>
    c.json(await applications.createApplicationKey(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 201),
  )
  .openapi(regenerateKey, async (c) =>
    c.json(await applications.regenerateApplicationKey(c.var.context, c.var.principal, c.req.valid("param").id, c.req.valid("json")), 200),
  )
  .openapi(listKeys, async (c) =>
    c.json(await applications.listApplicationKeys(c.var.context, c.var.principal, c.req.valid("param").id), 200),
  )
  .openapi(getKey, async (c) => {
    const { id, key_id } = c.req.valid("param");
    return c.json(await applications.getApplicationKey(c.var.context, c.var.principal, id, key_id), 200);
  })
  .openapi(revokeKey, async (c) => {
    const { id, key_id } = c.req.valid("param");
    await applications.revokeApplicationKey(c.var.context, c.var.principal, id, key_id);
    return c.body(null, 204);
  });
