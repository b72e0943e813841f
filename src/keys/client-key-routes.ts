import { createRoute, z } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { CLIENT_KEY_EXAMPLE, CLIENT_KEY_REQUEST_EXAMPLE, CREATED_CLIENT_KEY_EXAMPLE } from "../client-keys/examples";
import { ClientKeyBody, ClientKeySchema, CreatedClientKeySchema } from "../client-keys/schema";
import * as clientKeys from "../client-keys/service";
import { requireContentType } from "../http/middleware";
import { IDEMPOTENCY_KEY_HEADER } from "../http/openapi-document";
import { createRouter } from "../http/router";
import { IdParams, jsonContent, optionalJsonBody, problemResponses } from "../http/schemas";
import { idempotentControlWrite } from "../idempotency/middleware";

/*
 * The tenants' client encryption keys (src/client-keys/) over HTTP: beside the operator's keyring
 * routes, since their create takes an idempotency key (src/idempotency/ stands above
 * src/client-keys/, which token creation uses to open a JWE).
 */

const tags = ["Client encryption keys"];
const security = [{ ApiKey: [] }];
/** The Node SDK 5.7 posts `keys.create` as `application/json-patch+json`: a JSON body all the same. */
const json = requireContentType("application/json", "application/json-patch+json");

const create = createRoute({
  method: "post",
  path: "/keys",
  tags,
  security,
  summary: "Create a client encryption key; its public key is shown once",
  description:
    "Needs `keys:create`. The vault generates an X25519 key pair and keeps the private key sealed under the tenant's keys; " +
    "the answer is the only one that shows the public key. Data encrypted to it as a JWE (ECDH-ES, A256GCM, `kid` the key's " +
    "id) is accepted where token data is (POST /tokens, POST /tokenize) until `expires_at`: at most one year ahead, one year " +
    "ahead when absent. A tenant holds at most 100 keys (409 beyond).",
  middleware: [requirePermission("keys:create"), json, idempotentControlWrite(clientKeys.answerCommittedCreate)] as const,
  parameters: [IDEMPOTENCY_KEY_HEADER],
  request: optionalJsonBody(ClientKeyBody, CLIENT_KEY_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(CreatedClientKeySchema, "The key, with its public key", CREATED_CLIENT_KEY_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 503),
  },
});

const list = createRoute({
  method: "get",
  path: "/keys",
  tags,
  security,
  summary: "List client encryption keys, without their public keys",
  description: "Needs `keys:read`. The tenant's client encryption keys (at most 100), newest first, expired ones included.",
  middleware: [requirePermission("keys:read")] as const,
  responses: {
    200: jsonContent(z.array(ClientKeySchema), "The keys", [CLIENT_KEY_EXAMPLE]),
    ...problemResponses(401, 403),
  },
});

const get = createRoute({
  method: "get",
  path: "/keys/{id}",
  tags,
  security,
  summary: "Read a client encryption key, without its public key",
  description: "Needs `keys:read`.",
  middleware: [requirePermission("keys:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(ClientKeySchema, "The key", CLIENT_KEY_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const remove = createRoute({
  method: "delete",
  path: "/keys/{id}",
  tags,
  security,
  summary: "Delete a client encryption key",
  description: "Needs `keys:delete`. Its private key is destroyed: a JWE encrypted to it is refused from then on.",
  middleware: [requirePermission("keys:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

export const clientKeyRoutes = createRouter()
  .openapi(create, async (c) => c.json(await clientKeys.createClientKey(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await clientKeys.listClientKeys(c.var.context), 200))
  .openapi(get, async (c) => c.json(await clientKeys.getClientKey(c.var.context, c.req.valid("param").id), 200))
  .openapi(remove, async (c) => {
    await clientKeys.deleteClientKey(c.var.context, c.req.valid("param").id);
    return c.body(null, 204);
  });
