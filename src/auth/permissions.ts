/** `expiring` applications are made only by authorizing a session (src/sessions/), never by POST /applications. */
export const APPLICATION_TYPES = ["private", "public", "management", "expiring"] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];
export const CREATABLE_APPLICATION_TYPES = ["private", "public", "management"] as const;

export const TOKEN_PERMISSIONS = ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"] as const;

/** Token intents (src/token-intents/): create with a public or private key; read and delete with a private one. */
export const TOKEN_INTENT_PERMISSIONS = ["token-intent:create", "token-intent:read", "token-intent:delete"] as const;

/** Documents (src/documents/): upload, read the metadata, download the bytes (`reveal`), delete; private keys only. */
export const DOCUMENT_PERMISSIONS = ["documents:create", "documents:read", "documents:reveal", "documents:delete"] as const;

export const MANAGEMENT_PERMISSIONS = [
  "application:create",
  "application:read",
  "application:update",
  "application:delete",
  "proxy:create",
  "proxy:read",
  "proxy:update",
  "proxy:delete",
  "reactor:create",
  "reactor:read",
  "reactor:update",
  "reactor:delete",
  "webhook:create",
  "webhook:read",
  "webhook:update",
  "webhook:delete",
  "keys:create",
  "keys:read",
  "keys:delete",
  "log:read",
  "tenant:read",
  "tenant:update",
] as const;

export const PERMISSIONS = [
  ...TOKEN_PERMISSIONS,
  ...TOKEN_INTENT_PERMISSIONS,
  "session:authorize",
  ...MANAGEMENT_PERMISSIONS,
  ...DOCUMENT_PERMISSIONS,
] as const;
export type Permission = (typeof PERMISSIONS)[number];
export type TokenPermission = (typeof TOKEN_PERMISSIONS)[number];

/** Which application types may hold each permission. */
export const PERMISSIONS_BY_TYPE: Record<ApplicationType, readonly Permission[]> = {
  public: ["token:create", "token:update", "token-intent:create"],
  private: [...TOKEN_PERMISSIONS, ...TOKEN_INTENT_PERMISSIONS, "session:authorize", ...DOCUMENT_PERMISSIONS],
  management: MANAGEMENT_PERMISSIONS,
  expiring: TOKEN_PERMISSIONS,
};

export const PERMISSION_DESCRIPTIONS: Record<Permission, string> = {
  "token:create": "Create tokens and tokenize payloads",
  "token:read": "Read tokens by id",
  "token:update": "Update tokens",
  "token:delete": "Delete tokens",
  "token:search": "Search tokens",
  "token:use": "Detokenize tokens in proxies and reactors",
  "token-intent:create": "Create token intents, which a private key converts into tokens",
  "token-intent:read": "Read token intents by id (never their data)",
  "token-intent:delete": "Delete token intents",
  "session:authorize": "Authorize sessions with no more than this application holds (POST /sessions/authorize)",
  "application:create": "Create applications and their keys",
  "application:read": "Read applications",
  "application:update": "Update applications",
  "application:delete": "Delete applications and revoke their keys",
  "proxy:create": "Create proxies",
  "proxy:read": "Read proxies",
  "proxy:update": "Update proxies",
  "proxy:delete": "Delete proxies",
  "reactor:create": "Create reactor formulas and reactors",
  "reactor:read": "Read reactor formulas and reactors",
  "reactor:update": "Update reactor formulas and reactors",
  "reactor:delete": "Delete reactor formulas and reactors",
  "webhook:create": "Create webhooks",
  "webhook:read": "Read webhooks",
  "webhook:update": "Update webhooks",
  "webhook:delete": "Delete webhooks",
  "keys:create": "Create client encryption keys (their public key is shown once)",
  "keys:read": "Read client encryption keys (never a public or private key)",
  "keys:delete": "Delete client encryption keys, destroying their private keys",
  "log:read": "Read and verify the audit log",
  "tenant:read": "Read the caller's own tenant (GET /tenants/self)",
  "tenant:update": "Rename the caller's own tenant (PUT /tenants/self)",
  "documents:create": "Upload documents (POST /documents)",
  "documents:read": "Read documents' metadata (never their bytes)",
  "documents:reveal": "Download documents' bytes, decrypted (GET /documents/{id}/data)",
  "documents:delete": "Delete documents and their stored bytes",
};

export function mayHold(type: ApplicationType, permission: string): boolean {
  return (PERMISSIONS_BY_TYPE[type] as readonly string[]).includes(permission);
}
