/** `expiring` applications are made only by authorizing a session (src/sessions/), never by POST /applications. */
export const APPLICATION_TYPES = ["private", "public", "management", "expiring"] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];
export const CREATABLE_APPLICATION_TYPES = ["private", "public", "management"] as const;

export const TOKEN_PERMISSIONS = ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"] as const;

/** Token intents (src/token-intents/): create with a public or private key; read and delete with a private one. */
export const TOKEN_INTENT_PERMISSIONS = ["token-intent:create", "token-intent:read", "token-intent:delete"] as const;

/** Apple Pay (src/apple-pay/): decrypting a token with a public or private key; its merchant configuration with a management one. */
export const APPLE_PAY_PERMISSIONS = ["apple-pay:create"] as const;
/** The Apple Pay tokens it makes: read (masked), reveal (the card and cryptogram), delete; private keys only. */
export const APPLE_PAY_TOKEN_PERMISSIONS = ["apple-pay:read", "apple-pay:reveal", "apple-pay:delete"] as const;
/** Apple Pay on the web's merchant sessions (src/apple-pay/session.ts): requested by a page's public key or a server's private one. */
export const APPLE_PAY_SESSION_PERMISSIONS = ["apple-pay:session"] as const;
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
  "google-pay-merchant:create",
  "google-pay-merchant:read",
  "google-pay-merchant:delete",
  "apple-pay:manage",
  "log:read",
  "tenant:read",
  "tenant:update",
] as const;

/** Google Pay tokens decrypted by the vault (src/google-pay/): a PAN_ONLY token becomes a token intent. */
export const GOOGLE_PAY_PERMISSIONS = ["google-pay:create"] as const;
/** The google-pay resources CRYPTOGRAM_3DS tokens become: read (masked), reveal (whole, with the cryptogram), delete; private keys only. */
export const GOOGLE_PAY_RESOURCE_PERMISSIONS = ["google-pay:read", "google-pay:reveal", "google-pay:delete"] as const;

export const PERMISSIONS = [
  ...TOKEN_PERMISSIONS,
  ...TOKEN_INTENT_PERMISSIONS,
  "session:authorize",
  ...MANAGEMENT_PERMISSIONS,
  ...GOOGLE_PAY_PERMISSIONS,
  ...APPLE_PAY_PERMISSIONS,
  ...DOCUMENT_PERMISSIONS,
  ...APPLE_PAY_TOKEN_PERMISSIONS,
  ...GOOGLE_PAY_RESOURCE_PERMISSIONS,
  ...APPLE_PAY_SESSION_PERMISSIONS,
] as const;
export type Permission = (typeof PERMISSIONS)[number];
export type TokenPermission = (typeof TOKEN_PERMISSIONS)[number];

/** Which application types may hold each permission. */
export const PERMISSIONS_BY_TYPE: Record<ApplicationType, readonly Permission[]> = {
  public: [
    "token:create",
    "token:update",
    "token-intent:create",
    ...GOOGLE_PAY_PERMISSIONS,
    ...APPLE_PAY_PERMISSIONS,
    ...APPLE_PAY_SESSION_PERMISSIONS,
  ],
  private: [
    ...TOKEN_PERMISSIONS,
    ...TOKEN_INTENT_PERMISSIONS,
    "session:authorize",
    ...GOOGLE_PAY_PERMISSIONS,
    ...APPLE_PAY_PERMISSIONS,
    ...DOCUMENT_PERMISSIONS,
    ...APPLE_PAY_TOKEN_PERMISSIONS,
    ...GOOGLE_PAY_RESOURCE_PERMISSIONS,
    ...APPLE_PAY_SESSION_PERMISSIONS,
  ],
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
  "google-pay-merchant:create": "Register Google Pay merchants and their private keys (never answered back)",
  "google-pay-merchant:read": "Read Google Pay merchant registrations and their keys' fingerprints",
  "google-pay-merchant:delete": "Delete Google Pay merchant registrations and their keys, destroying the private keys",
  "google-pay:create": "Decrypt Google Pay tokens into token intents (POST /google-pay)",
  "apple-pay:manage":
    "Register Apple Pay merchants and their payment processing certificates (never answered back), and the domains of Apple Pay on the web",
  "apple-pay:create": "Decrypt Apple Pay payment tokens into Apple Pay tokens (POST /apple-pay)",
  "log:read": "Read and verify the audit log",
  "tenant:read": "Read the caller's own tenant (GET /tenants/self)",
  "tenant:update": "Rename the caller's own tenant (PUT /tenants/self)",
  "documents:create": "Upload documents (POST /documents)",
  "documents:read": "Read documents' metadata (never their bytes)",
  "documents:reveal": "Download documents' bytes, decrypted (GET /documents/{id}/data)",
  "documents:delete": "Delete documents and their stored bytes",
  "apple-pay:read": "Read Apple Pay tokens, their card masked (GET /apple-pay/{id})",
  "apple-pay:reveal": "Read Apple Pay tokens' card and cryptogram in the clear, with apple-pay:read",
  "apple-pay:delete": "Delete Apple Pay tokens",
  "google-pay:read": "Read Google Pay resources (CRYPTOGRAM_3DS cards), their number masked to the last four",
  "google-pay:reveal": "Read Google Pay resources whole: the device card number and, while it is kept, the 3DS cryptogram",
  "google-pay:delete": "Delete Google Pay resources",
  "apple-pay:session": "Request Apple Pay on the web merchant sessions for the tenant's registered domains (POST /apple-pay/session)",
};

export function mayHold(type: ApplicationType, permission: string): boolean {
  return (PERMISSIONS_BY_TYPE[type] as readonly string[]).includes(permission);
}
