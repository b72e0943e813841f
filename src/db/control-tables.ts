import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { auditColumns } from "./columns";

/*
 * The control database's tables (binding DB): the directory of tenants, their keys, applications
 * and API keys, proxies, reactors, formulas and webhooks; everything a credential resolves through.
 * Every table that holds tenant data starts its primary key or first index with tenant_id, and every
 * query filters on it first. Times are integer milliseconds since the epoch so ranges use an index.
 */

export const tenants = sqliteTable("tenants", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** The binding of the data database that holds the tenant's tokens (the directory's one column). */
  database: text("database").notNull().default("DB"),
  createdAt: integer("created_at").notNull(),
  /**
   * The tenant's version-1 data keys are derived from the keyring's version 1 (tenants created
   * before envelope encryption), until they are stored wrapped like every other tenant's.
   */
  keysDerived: integer("keys_derived", { mode: "boolean" }).notNull().default(true),
  /** When the tenant was crypto-shredded: its keys are gone and the cron purges its rows, then this one. */
  shreddedAt: integer("shredded_at"),
  /** The application that last renamed the tenant (PUT /tenants/self), and when. */
  modifiedBy: text("modified_by"),
  modifiedAt: integer("modified_at"),
});

/**
 * Tenants crypto-shredded and purged (control database), kept so that the id is never a tenant again:
 * BOOTSTRAP_API_KEY's tenant id derives from the key, and would otherwise come back empty at the next
 * isolate's bootstrap. Until the purge, the shredded tenant's own row holds its id.
 */
export const shreddedTenants = sqliteTable("shredded_tenants", {
  tenantId: text("tenant_id").primaryKey(),
  shreddedAt: integer("shredded_at").notNull(),
});

/**
 * A tenant's data keys, one row per version (control database): the encryption, blind-index,
 * fingerprint and audit keys, wrapped together by the keyring's key-encryption key `kek_version`.
 * The highest version writes; every version present reads. Destroying the rows crypto-shreds the tenant.
 */
export const tenantKeys = sqliteTable(
  "tenant_keys",
  {
    tenantId: text("tenant_id").notNull(),
    version: integer("version").notNull(),
    kekVersion: integer("kek_version").notNull(),
    /** `k{kek_version}.{iv}.{AES-256-GCM of the four keys}`, the tenant and version authenticated. */
    wrapped: text("wrapped").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.version] }), index("tenant_keys_kek").on(table.kekVersion)],
);

/**
 * A tenant's data-key rotation (control database), one row per tenant: the latest rotation stays
 * as `done` until the next one starts. The job (src/keys/rotation.ts) advances it in bounded steps;
 * whoever holds the lease (`runner`, until `lease_until`) is the one chain of queue messages driving it.
 */
export const keyRotations = sqliteTable("key_rotations", {
  tenantId: text("tenant_id").primaryKey(),
  fromVersion: integer("from_version").notNull(),
  toVersion: integer("to_version").notNull(),
  /** waiting (isolates learn the new version) → running (re-encrypting) → finishing (last check) → done. */
  state: text("state", { enum: ["waiting", "running", "finishing", "done"] }).notNull(),
  /** Records re-encrypted so far. */
  done: integer("done").notNull().default(0),
  /** Records under older versions when re-encryption began; null while waiting. */
  total: integer("total"),
  startedAt: integer("started_at").notNull(),
  /** When the current state began. */
  stateStartedAt: integer("state_started_at").notNull(),
  finishedAt: integer("finished_at"),
  runner: text("runner").notNull(),
  leaseUntil: integer("lease_until").notNull(),
  /** The last step's failure, kept until a step succeeds (the step is retried). */
  lastError: text("last_error"),
});

/** A tenant being moved to another data database (control database); the row goes when the move is done. */
export const tenantMoves = sqliteTable("tenant_moves", {
  tenantId: text("tenant_id").primaryKey(),
  source: text("source").notNull(),
  target: text("target").notNull(),
  /** copying → blocked (writes refused while the last changes are copied) → switched → gone. */
  phase: text("phase", { enum: ["copying", "blocked", "switched"] }).notNull(),
  /**
   * The last token id handled by the current stage: copied in the copying phase; in the blocked
   * phase, copied (stage `changed`) or checked for deletion (stage `deleted`).
   */
  cursor: text("cursor").notNull().default(""),
  /**
   * Where the blocked phase's last copy stands, so that it too goes a bounded step a call:
   * "" (not begun), `changed`, `deleted`, `audit`, then the rest and the switch (src/tenants/moves.ts).
   */
  stage: text("stage", { enum: ["", "changed", "deleted", "audit"] })
    .notNull()
    .default(""),
  copyStartedAt: integer("copy_started_at").notNull(),
  /** When the current phase began. */
  phaseStartedAt: integer("phase_started_at").notNull(),
});

export const applications = sqliteTable(
  "applications",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    name: text("name").notNull(),
    type: text("type", { enum: ["private", "public", "management", "expiring"] }).notNull(),
    /** JSON array of permission names. */
    permissions: text("permissions").notNull().default("[]"),
    /** JSON array of access rules. */
    rules: text("rules").notNull().default("[]"),
    /** JSON array of exact origins a public application's key is used from (frames and the Origin header). */
    allowedOrigins: text("allowed_origins").notNull().default("[]"),
    ...auditColumns,
    /** An expiring application's end: every key of it is refused (401) from then on, and the cron deletes it. */
    expiresAt: integer("expires_at"),
    /**
     * An expiring application's: the API key that authorized its session. Its keys work only while
     * that key exists and has not expired (src/auth/storage.ts checks it in the key lookup).
     */
    authorizerKeyId: text("authorizer_key_id"),
  },
  (table) => [
    index("applications_tenant_created").on(table.tenantId, table.createdAt, table.id),
    index("applications_expires").on(table.expiresAt),
  ],
);

/**
 * Authorized sessions (src/sessions/). A session awaiting authorization is stored nowhere: its nonce,
 * signed by the vault, carries what authorizing needs. Authorizing inserts this row with the expiring
 * application and its key (this key_hash) in one batch; the unique nonce hash makes a nonce authorize once.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    /** The public application whose key created it. */
    applicationId: text("application_id").notNull(),
    /** SHA-256 of the session key and of the nonce; neither is stored in plaintext. */
    keyHash: text("key_hash").notNull(),
    nonceHash: text("nonce_hash").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /** The expiring application its authorization made. */
    expiringApplicationId: text("expiring_application_id").notNull(),
  },
  (table) => [uniqueIndex("sessions_nonce").on(table.tenantId, table.nonceHash), index("sessions_expires").on(table.expiresAt)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    applicationId: text("application_id").notNull(),
    /** SHA-256 of the key; the plaintext is never stored. */
    hash: text("hash").notNull(),
    createdAt: integer("created_at").notNull(),
    /** After this time the key is refused (401); null: it does not expire. */
    expiresAt: integer("expires_at"),
  },
  (table) => [uniqueIndex("api_keys_hash").on(table.hash), index("api_keys_application").on(table.tenantId, table.applicationId)],
);

export const proxies = sqliteTable(
  "proxies",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    name: text("name").notNull(),
    /** SHA-256 of the proxy key: invocation finds the proxy by it. */
    keyHash: text("key_hash").notNull(),
    /** The key itself, encrypted under the tenant key, so reads can return it. */
    keyCiphertext: text("key_ciphertext").notNull(),
    /** The key a roll replaced, which keeps working until previous_key_expires_at (its grace period). */
    previousKeyHash: text("previous_key_hash"),
    previousKeyExpiresAt: integer("previous_key_expires_at"),
    destinationUrl: text("destination_url").notNull(),
    requestTransformCode: text("request_transform_code"),
    responseTransformCode: text("response_transform_code"),
    applicationId: text("application_id"),
    /** Encrypted JSON object: configuration often holds the partner's secrets. */
    configuration: text("configuration"),
    requireAuth: integer("require_auth", { mode: "boolean" }).notNull().default(true),
    ...auditColumns,
  },
  (table) => [
    uniqueIndex("proxies_key_hash").on(table.keyHash),
    uniqueIndex("proxies_previous_key_hash").on(table.previousKeyHash),
    index("proxies_tenant_created").on(table.tenantId, table.createdAt, table.id),
  ],
);

export const reactorFormulas = sqliteTable(
  "reactor_formulas",
  {
    id: text("id").primaryKey(),
    /** Null for official formulas, which every tenant can read and use. */
    tenantId: text("tenant_id"),
    name: text("name").notNull(),
    description: text("description"),
    type: text("type", { enum: ["official", "private"] }).notNull(),
    status: text("status", { enum: ["verified", "coming_soon"] })
      .notNull()
      .default("verified"),
    icon: text("icon"),
    code: text("code").notNull(),
    /** JSON array of configuration elements. */
    configuration: text("configuration").notNull().default("[]"),
    /** JSON array of request parameter elements. */
    requestParameters: text("request_parameters").notNull().default("[]"),
    ...auditColumns,
  },
  (table) => [index("reactor_formulas_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/** A reactor runs either a formula's code (formula_id) or its own (code): exactly one of the two is set. */
export const reactors = sqliteTable(
  "reactors",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    name: text("name").notNull(),
    formulaId: text("formula_id"),
    /** The reactor's own code, checked by the sandbox when saved, as a formula's is. */
    code: text("code"),
    /** Encrypted JSON object: reactor configuration often holds the partner's secrets. */
    configuration: text("configuration"),
    applicationId: text("application_id"),
    ...auditColumns,
  },
  (table) => [
    index("reactors_tenant_created").on(table.tenantId, table.createdAt, table.id),
    index("reactors_tenant_formula").on(table.tenantId, table.formulaId),
    check("reactors_formula_or_code", sql`(formula_id IS NULL) != (code IS NULL)`),
  ],
);

/** A tenant's webhooks (control database): where events are delivered, signed with the webhook's secret. */
export const webhooks = sqliteTable(
  "webhooks",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    name: text("name").notNull(),
    url: text("url").notNull(),
    /** JSON array of event types. */
    events: text("events").notNull(),
    status: text("status", { enum: ["enabled", "disabled"] })
      .notNull()
      .default("enabled"),
    notifyEmail: text("notify_email"),
    /** The signing secret, encrypted under the tenant key; returned once, at creation. */
    secretCiphertext: text("secret_ciphertext").notNull(),
    /** Deliveries that failed in a row; the webhook is disabled when it reaches the limit. */
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    ...auditColumns,
  },
  (table) => [index("webhooks_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/**
 * What became of a webhook's deliveries, one row per event and webhook, for GET
 * /webhooks/{id}/deliveries and the console: the outcome of each attempt as the receiver gave it,
 * never the event's payload. The newest `WEBHOOKS.deliveriesKept` of a webhook are kept (pruned in
 * the batch that records one), and they go with their webhook.
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    tenantId: text("tenant_id").notNull(),
    webhookId: text("webhook_id").notNull(),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    /** `delivered`, `retrying` (the queue tries again), or `failed` (retries spent, or the webhook disabled). */
    status: text("status", { enum: ["delivered", "retrying", "failed"] }).notNull(),
    attempts: integer("attempts").notNull(),
    /** Why the last attempt failed (`answered 500`, `failed: …`); null once delivered. */
    lastOutcome: text("last_outcome"),
    firstAttemptAt: integer("first_attempt_at").notNull(),
    lastAttemptAt: integer("last_attempt_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.webhookId, table.eventId] }),
    index("webhook_deliveries_recent").on(table.tenantId, table.webhookId, table.lastAttemptAt),
  ],
);

/**
 * A tenant's client encryption keys (control database): X25519 key pairs whose public half, shown
 * once, lets a browser or app encrypt data (a JWE) that only the vault can open. The private key
 * never leaves the vault: it is stored sealed under the tenant's data key, so crypto-shredding and
 * rotation cover it like any tenant secret.
 */
export const clientEncryptionKeys = sqliteTable(
  "client_encryption_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    /** The private key (PKCS #8, base64), encrypted under the tenant key; never answered. */
    privateKeyCiphertext: text("private_key_ciphertext").notNull(),
    /** After this, a JWE to the key is refused. */
    expiresAt: integer("expires_at").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("client_encryption_keys_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/**
 * Console sessions (src/console/): a person signed in to /console with an API key. The cookie's token
 * is stored only as its SHA-256 hash, and the key only by its id: each request resolves that key as
 * the key itself would be, so revoking it or deleting its application ends the session.
 */
export const consoleSessions = sqliteTable(
  "console_sessions",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    applicationId: text("application_id").notNull(),
    keyId: text("key_id").notNull(),
    /** SHA-256 of the cookie's token; the token itself is never stored. */
    tokenHash: text("token_hash").notNull(),
    createdAt: integer("created_at").notNull(),
    /** When the session was last renewed (written at most once a minute). */
    renewedAt: integer("renewed_at").notNull(),
    /** The idle end: renewed_at plus the idle lifetime, never past ends_at. */
    expiresAt: integer("expires_at").notNull(),
    /** The absolute end, however much the session is used. */
    endsAt: integer("ends_at").notNull(),
  },
  (table) => [
    uniqueIndex("console_sessions_token").on(table.tokenHash),
    index("console_sessions_application").on(table.tenantId, table.applicationId),
    index("console_sessions_expires").on(table.expiresAt),
  ],
);

/**
 * A tenant's Google Pay merchant registrations (src/google-pay/): the merchant id Google signs its
 * tokens for (`merchant:<merchant_identifier>` is the recipient id POST /google-pay checks).
 */
export const googlePayMerchants = sqliteTable(
  "google_pay_merchants",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    merchantIdentifier: text("merchant_identifier").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("google_pay_merchants_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/**
 * A Google Pay merchant's private keys, the ECv2 recipient keys its tokens are encrypted to. Sealed
 * under the tenant's data key like any tenant secret (crypto-shredding and rotation cover them) and
 * never answered: only a fingerprint of the public key is shown.
 */
export const googlePayMerchantKeys = sqliteTable(
  "google_pay_merchant_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    merchantId: text("merchant_id").notNull(),
    /** The private key (PKCS #8, base64), encrypted under the tenant key; never answered. */
    privateKeyCiphertext: text("private_key_ciphertext").notNull(),
    /** SHA-256 of the public key's uncompressed point, hex. */
    fingerprint: text("fingerprint").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("google_pay_merchant_keys_merchant").on(table.tenantId, table.merchantId, table.createdAt, table.id)],
);

/**
 * Google Pay resources (src/google-pay/): the device card of a CRYPTOGRAM_3DS token, sealed under the
 * tenant's data key like a token's data, with its 3DS cryptogram and ECI sealed apart, so the cron can
 * drop them at their deadline without reading the card. Only the details Google states about the
 * payment (auth method, message id, assurance) and the times are in the clear.
 */
export const googlePayResources = sqliteTable(
  "google_pay_resources",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    /** AES-256-GCM ciphertext of the card (`{number, expiration_month, expiration_year}`) under the tenant's data key. */
    ciphertext: text("ciphertext").notNull(),
    /** The cryptogram and ECI (`{threeds_cryptogram, eci_indicator}`), sealed; null once past `authentication_expires_at`. */
    authenticationCiphertext: text("authentication_ciphertext"),
    /** When the cryptogram must be gone (CARD_CVC_RETENTION_S after creation); reads stop showing it then, the cron clears it. */
    authenticationExpiresAt: integer("authentication_expires_at"),
    /** The payment's details as JSON (tsp, auth_method, message_id, eci_indicator, assurance_details): no card data. */
    details: text("details").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
    /** The request's `expires_at`: after it the resource is unknown everywhere and the cron deletes it; null for none. */
    expiresAt: integer("expires_at"),
  },
  (table) => [
    index("google_pay_resources_tenant").on(table.tenantId, table.id),
    index("google_pay_resources_expires").on(table.expiresAt).where(sql`expires_at IS NOT NULL`),
    index("google_pay_resources_authentication_expires")
      .on(table.authenticationExpiresAt)
      .where(sql`authentication_expires_at IS NOT NULL`),
  ],
);

/**
 * A tenant's Apple Pay merchant registrations (src/apple-pay/): a merchant identifier, under which
 * payment processing certificates are registered.
 */
export const applePayMerchants = sqliteTable(
  "apple_pay_merchants",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    merchantIdentifier: text("merchant_identifier").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("apple_pay_merchants_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/**
 * A merchant registration's payment processing certificates: the certificate Apple issued (public)
 * and its private key, sealed under the tenant's data key, so crypto-shredding and rotation cover it
 * like any tenant secret. The key is never answered.
 */
export const applePayCertificates = sqliteTable(
  "apple_pay_certificates",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    merchantRegistrationId: text("merchant_registration_id").notNull(),
    domain: text("domain"),
    /** The certificate, DER in base64. */
    certificate: text("certificate").notNull(),
    /** SHA-256 of the certificate's public key (base64): the `publicKeyHash` of tokens encrypted to it. */
    publicKeyHash: text("public_key_hash").notNull(),
    /** SHA-256 of the certificate (hex). */
    fingerprint: text("fingerprint").notNull(),
    /** The private key (PKCS #8, base64), encrypted under the tenant key; never answered. */
    privateKeyCiphertext: text("private_key_ciphertext").notNull(),
    /** The certificate's notAfter. */
    expiresAt: integer("expires_at").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    index("apple_pay_certificates_tenant_merchant").on(table.tenantId, table.merchantRegistrationId),
    index("apple_pay_certificates_tenant_key_hash").on(table.tenantId, table.publicKeyHash),
  ],
);

/**
 * Apple Pay tokens (src/apple-pay/): the device card an EC_v1 payment token carried, sealed under the
 * tenant's data key, and its online payment cryptogram and ECI sealed apart, kept until
 * `authentication_expires_at` (the card rule for a cvc, CARD_CVC_RETENTION_S), when the cron clears
 * them. Only the facts Apple's header and the payment data state in the clear are kept in the clear.
 */
export const applePayTokens = sqliteTable(
  "apple_pay_tokens",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    /** `dpan`: a device card (merchant tokens, `mpan`, are not accepted). */
    type: text("type").notNull(),
    /** AES-256-GCM ciphertext of `{number, expiration_month, expiration_year}` under the tenant's data key. */
    dataCiphertext: text("data_ciphertext").notNull(),
    /** Ciphertext of `{threeds_cryptogram, eci_indicator}`; null once cleared (or when the token held none). */
    authenticationCiphertext: text("authentication_ciphertext"),
    /** When the cryptogram must be gone; null once cleared. */
    authenticationExpiresAt: integer("authentication_expires_at"),
    transactionId: text("transaction_id").notNull(),
    paymentDataType: text("payment_data_type"),
    deviceManufacturerIdentifier: text("device_manufacturer_identifier"),
    createdBy: text("created_by").notNull(),
    createdAt: integer("created_at").notNull(),
    /** After this the token is unknown everywhere; the cron deletes it. */
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [
    index("apple_pay_tokens_tenant").on(table.tenantId, table.id),
    index("apple_pay_tokens_expires").on(table.expiresAt),
    index("apple_pay_tokens_authentication_expires").on(table.authenticationExpiresAt).where(sql`authentication_expires_at IS NOT NULL`),
  ],
);

/**
 * Documents (src/documents/): each row describes one object in the DOCUMENTS bucket, whose bytes are
 * encrypted chunk by chunk under the document's own data key (docs/documents.md). That key is stored
 * here sealed under the tenant's data key, so crypto-shredding the tenant makes every document
 * unreadable and a rotation re-seals the key, never the bytes.
 */
export const documents = sqliteTable(
  "documents",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    /** The request's metadata, JSON (string values, as a token's metadata: not secret). */
    metadata: text("metadata").notNull(),
    contentType: text("content_type").notNull(),
    /** The document's length in bytes, before encryption. */
    size: integer("size").notNull(),
    /** The document's data key (32 bytes, base64), sealed under the tenant's data key; never answered. */
    dataKeyCiphertext: text("data_key_ciphertext").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("documents_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/**
 * The domains a tenant registered for Apple Pay on the web (src/apple-pay/domains.ts), as Apple holds
 * them under the vault's platform identity with the tenant id as the merchant. A domain belongs to one
 * tenant at a time (its primary key), so that no tenant can ask Apple for sessions on another's domain.
 */
export const applePayDomains = sqliteTable(
  "apple_pay_domains",
  {
    domain: text("domain").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    createdBy: text("created_by"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("apple_pay_domains_tenant").on(table.tenantId, table.domain)],
);

/**
 * The commit mark of an idempotency claim on a route that writes this database (POST /applications, /proxies …):
 * written in the batch of the write it answers, as the data database's records carry theirs, so a
 * crash leaves both or neither. The claim itself stays in the tenant's data database
 * (idempotency_records); one mark a key, so of two attempts of one request (a retry that took an
 * expired claim over, and the attempt that outlived it) only one batch can commit.
 */
export const idempotencyMarks = sqliteTable(
  "idempotency_marks",
  {
    tenantId: text("tenant_id").notNull(),
    applicationId: text("application_id").notNull(),
    key: text("key").notNull(),
    /** What the write did, sealed under the tenant's keys like the stored answer (it may hold a new API key). */
    outcome: text("outcome").notNull(),
    /** The claim's time: a mark older than the key's record belongs to an earlier use of the key. */
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.applicationId, table.key] }),
    index("idempotency_marks_created").on(table.createdAt),
  ],
);

/**
 * Every script uploaded to the dispatch namespace (SANDBOX_HOST=dispatch), recorded before its
 * upload. A script is named by its owner and its code, so an update uploads a new one beside the
 * old; the cron deletes those no owner runs any more (src/sandbox/dispatch-host.ts,
 * retireUnusedScripts). Not purged with a shredded tenant: the cron needs the record to delete the script.
 */
export const dispatchScripts = sqliteTable(
  "dispatch_scripts",
  {
    /** The script's name in the namespace (dispatchScriptName). */
    name: text("name").primaryKey(),
    /** Null for an official formula's, which belongs to no tenant. */
    tenantId: text("tenant_id"),
    kind: text("kind", { enum: ["request-transform", "response-transform", "reactor"] }).notNull(),
    ownerId: text("owner_id").notNull(),
    /** When it was last uploaded. */
    publishedAt: integer("published_at").notNull(),
    /**
     * Since when it is known to be uploaded or in use: the cron looks at it once the grace period
     * has passed since, and moves it a day ahead when its owner still runs it (brought back to the
     * present when its owner records another version).
     */
    checkedAt: integer("checked_at").notNull(),
    /**
     * When the cron first found that no owner runs it; null while one does. It is deleted only when
     * found so again a grace period later: an isolate may still hold the row that named it.
     */
    unusedSince: integer("unused_since"),
  },
  (table) => [
    index("dispatch_scripts_checked").on(table.checkedAt),
    // Counting an owner's versions on each save (DispatchHost.publish).
    index("dispatch_scripts_owner").on(table.tenantId, table.kind, table.ownerId),
  ],
);
