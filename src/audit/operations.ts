/**
 * What each route records: the request's own audit entry. Every authenticated route is here, and
 * test/audit/coverage.test.ts holds the table to the OpenAPI document, so a new route cannot go
 * unrecorded. The entity id is the route's `{id}` (or the parameter named), unless the service
 * names it (a created entity).
 */
import type { EntityType } from "./entry";

export interface AuditedOperation {
  entity: EntityType;
  operation: string;
  /** What happened, read with the entry's status: "Read token" with 404 was a read of no token. */
  message: string;
  /** The path parameter holding the entity id; `id` by default, null when the path names none. */
  idParam?: string | null;
}

const op = (entity: EntityType, operation: string, message: string, idParam?: string | null): AuditedOperation => ({
  entity,
  operation,
  message,
  idParam,
});

export const AUDITED_ROUTES: Record<string, AuditedOperation> = {
  "POST /applications": op("application", "create", "Created application"),
  "GET /applications": op("application", "list", "Listed applications"),
  "GET /applications/key": op("application", "read", "Read the calling key's application"),
  "GET /applications/{id}": op("application", "read", "Read application"),
  "PUT /applications/{id}": op("application", "update", "Updated application"),
  "DELETE /applications/{id}": op("application", "delete", "Deleted application and revoked its keys"),
  "POST /applications/{id}/keys": op("api_key", "create", "Created API key", null),
  "POST /sessions": op("session", "create", "Created session", null),
  "POST /sessions/authorize": op("application", "create", "Authorized session as an expiring application", null),
  "POST /applications/{id}/regenerate": op("api_key", "create", "Regenerated API key", null),
  "GET /applications/{id}/keys": op("api_key", "list", "Listed application keys", null),
  "GET /applications/{id}/keys/{key_id}": op("api_key", "read", "Read API key", "key_id"),
  "DELETE /applications/{id}/keys/{key_id}": op("api_key", "delete", "Revoked API key", "key_id"),
  "POST /console/session": op("session", "sign_in", "Signed in to the console", null),
  "GET /console/session": op("session", "read", "Read the console session", null),
  "DELETE /console/session": op("session", "sign_out", "Signed out of the console", null),
  "GET /permissions": op("permission", "list", "Listed permissions"),
  "POST /proxies": op("proxy", "create", "Created proxy"),
  "GET /proxies": op("proxy", "list", "Listed proxies"),
  "GET /proxies/{id}": op("proxy", "read", "Read proxy"),
  "PUT /proxies/{id}": op("proxy", "update", "Updated proxy"),
  "PATCH /proxies/{id}": op("proxy", "update", "Updated proxy"),
  "DELETE /proxies/{id}": op("proxy", "delete", "Deleted proxy"),
  "POST /proxies/{id}/key": op("proxy", "roll_key", "Rolled proxy key"),
  "ALL /proxy": op("proxy", "invoke", "Invoked proxy", null),
  "POST /reactor-formulas": op("reactor-formula", "create", "Created reactor formula"),
  "GET /reactor-formulas": op("reactor-formula", "list", "Listed reactor formulas"),
  "GET /reactor-formulas/{id}": op("reactor-formula", "read", "Read reactor formula"),
  "PUT /reactor-formulas/{id}": op("reactor-formula", "update", "Updated reactor formula"),
  "DELETE /reactor-formulas/{id}": op("reactor-formula", "delete", "Deleted reactor formula"),
  "POST /reactors": op("reactor", "create", "Created reactor"),
  "GET /reactors": op("reactor", "list", "Listed reactors"),
  "GET /reactors/{id}": op("reactor", "read", "Read reactor"),
  "PUT /reactors/{id}": op("reactor", "update", "Updated reactor"),
  "PATCH /reactors/{id}": op("reactor", "update", "Updated reactor"),
  "DELETE /reactors/{id}": op("reactor", "delete", "Deleted reactor"),
  "POST /reactors/{id}/react": op("reactor", "react", "Reacted"),
  "POST /reactors/{id}/react-async": op("reactor", "react_async", "Queued async reaction"),
  "GET /reactors/{id}/results/{request_id}": op("reactor", "read_result", "Read async reaction result"),
  "POST /keys": op("client-key", "create", "Created client encryption key"),
  "GET /keys": op("client-key", "list", "Listed client encryption keys"),
  "GET /keys/{id}": op("client-key", "read", "Read client encryption key"),
  "DELETE /keys/{id}": op("client-key", "delete", "Deleted client encryption key"),
  "POST /documents": op("document", "create", "Uploaded document", null),
  "GET /documents/{id}": op("document", "read", "Read document"),
  "GET /documents/{id}/data": op("document", "reveal", "Downloaded document"),
  "DELETE /documents/{id}": op("document", "delete", "Deleted document"),
  // A wallet's token becomes a token intent, or (CRYPTOGRAM_3DS) a google-pay resource: the service names which.
  "POST /google-pay": op("token-intent", "create", "Decrypted a Google Pay token", null),
  "GET /google-pay/{id}": op("google-pay", "read", "Read Google Pay resource"),
  "DELETE /google-pay/{id}": op("google-pay", "delete", "Deleted Google Pay resource"),
  "POST /google-pay/merchant-registration": op("google-pay-merchant", "create", "Registered Google Pay merchant", null),
  "GET /google-pay/merchant-registration/{id}": op("google-pay-merchant", "read", "Read Google Pay merchant registration"),
  "DELETE /google-pay/merchant-registration/{id}": op("google-pay-merchant", "delete", "Deleted Google Pay merchant registration"),
  "POST /google-pay/merchant-registration/{merchant_id}/certificates": op(
    "google-pay-merchant-key",
    "create",
    "Registered Google Pay merchant key",
    null,
  ),
  "GET /google-pay/merchant-registration/{merchant_id}/certificates/{id}": op(
    "google-pay-merchant-key",
    "read",
    "Read Google Pay merchant key",
  ),
  "DELETE /google-pay/merchant-registration/{merchant_id}/certificates/{id}": op(
    "google-pay-merchant-key",
    "delete",
    "Deleted Google Pay merchant key",
  ),
  "POST /apple-pay": op("apple-pay", "create", "Created Apple Pay token", null),
  "GET /apple-pay/{id}": op("apple-pay", "read", "Read Apple Pay token"),
  "DELETE /apple-pay/{id}": op("apple-pay", "delete", "Deleted Apple Pay token"),
  "POST /apple-pay/merchant-registration": op("apple-pay-merchant", "create", "Registered Apple Pay merchant", null),
  "GET /apple-pay/merchant-registration/{id}": op("apple-pay-merchant", "read", "Read Apple Pay merchant registration"),
  "DELETE /apple-pay/merchant-registration/{id}": op("apple-pay-merchant", "delete", "Deleted Apple Pay merchant registration"),
  "POST /apple-pay/merchant-registration/{merchantId}/certificates": op(
    "apple-pay-certificate",
    "create",
    "Registered Apple Pay payment processing certificate",
    null,
  ),
  "GET /apple-pay/merchant-registration/{merchantId}/certificates/{id}": op(
    "apple-pay-certificate",
    "read",
    "Read Apple Pay payment processing certificate",
  ),
  "DELETE /apple-pay/merchant-registration/{merchantId}/certificates/{id}": op(
    "apple-pay-certificate",
    "delete",
    "Deleted Apple Pay payment processing certificate",
  ),
  "POST /apple-pay/domain-registration": op("apple-pay-domain", "create", "Registered Apple Pay domain", null),
  "PUT /apple-pay/domain-registration": op("apple-pay-domain", "update", "Replaced Apple Pay domains", null),
  "GET /apple-pay/domain-registration": op("apple-pay-domain", "list", "Listed Apple Pay domains", null),
  "POST /apple-pay/domain-deregistration": op("apple-pay-domain", "delete", "Deregistered Apple Pay domain", null),
  "POST /apple-pay/session": op("apple-pay-session", "create", "Requested Apple Pay merchant session", null),
  "GET /operator/keys": op("keys", "read", "Read the keyring's status", null),
  "POST /operator/keys/rewrap": op("keys", "rewrap", "Re-wrapped data keys", null),
  "POST /tenants": op("tenant", "create", "Created tenant", null),
  "POST /tenants/{id}/move": op("tenant", "move", "Moved tenant"),
  "DELETE /tenants/{id}": op("tenant", "shred", "Shredded tenant"),
  "POST /tenants/{id}/rotation": op("tenant", "rotate_keys", "Started rotating the tenant's data keys"),
  "GET /tenants/{id}/rotation": op("tenant", "read", "Read the tenant's data-key rotation"),
  "GET /tenants/self": op("tenant", "read", "Read the caller's tenant", null),
  "PUT /tenants/self": op("tenant", "update", "Renamed the caller's tenant", null),
  "GET /tenants/self/reports/usage": op("tenant", "read", "Read the caller's tenant's usage report", null),
  "POST /tokens": op("token", "create", "Created token"),
  "GET /tokens": op("token", "list", "Listed tokens"),
  "POST /tokens/search": op("token", "search", "Searched tokens"),
  "GET /v2/tokens": op("token", "list", "Listed tokens"),
  "POST /v2/tokens/search": op("token", "search", "Searched tokens"),
  "GET /tokens/{id}": op("token", "read", "Read token"),
  "PATCH /tokens/{id}": op("token", "update", "Updated token"),
  "DELETE /tokens/{id}": op("token", "delete", "Deleted token"),
  "POST /tokenize": op("token", "tokenize", "Tokenized"),
  "POST /token-intents": op("token-intent", "create", "Created token intent"),
  "GET /token-intents/{id}": op("token-intent", "read", "Read token intent"),
  "DELETE /token-intents/{id}": op("token-intent", "delete", "Deleted token intent"),
  "POST /detokenize": op("token", "detokenize", "Detokenized"),
  "GET /logs": op("log", "list", "Listed audit log entries"),
  "GET /logs/entity-types": op("log", "list", "Listed audit log entity types"),
  "GET /logs/verify": op("log", "verify", "Verified the audit log chain"),
  "GET /logs/summary": op("log", "read", "Read the audit log's summary"),
  "POST /webhooks": op("webhook", "create", "Created webhook"),
  "GET /webhooks": op("webhook", "list", "Listed webhooks"),
  "GET /webhooks/event-types": op("webhook", "list", "Listed webhook event types"),
  "GET /webhooks/{id}": op("webhook", "read", "Read webhook"),
  "GET /webhooks/{id}/deliveries": op("webhook", "list_deliveries", "Listed webhook deliveries"),
  "PUT /webhooks/{id}": op("webhook", "update", "Updated webhook"),
  "DELETE /webhooks/{id}": op("webhook", "delete", "Deleted webhook"),
};

/** The route's entry and its entity id from the path (`/tokens/{id}` against `/tokens/abc`). */
export function auditedOperation(
  method: string,
  pattern: string,
  path: string,
): { operation: AuditedOperation; entityId: string | null } | undefined {
  const documented = pattern.replace(/:(\w+)/g, "{$1}");
  const operation = AUDITED_ROUTES[`${method} ${documented}`];
  if (!operation) return undefined;
  const param = operation.idParam === undefined ? "id" : operation.idParam;
  if (param === null) return { operation, entityId: null };
  const index = documented.split("/").indexOf(`{${param}}`);
  const segment = index < 0 ? undefined : path.split("/")[index];
  return { operation, entityId: segment === undefined ? null : safeDecode(segment) };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment).slice(0, 200);
  } catch {
    return segment.slice(0, 200);
  }
}
