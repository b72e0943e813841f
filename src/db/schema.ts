import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/*
 * Every table that holds tenant data starts its primary key or first index with tenant_id, and every
 * query filters on it first. Times are integer milliseconds since the epoch so ranges use an index.
 */

const audit = {
  createdBy: text("created_by"),
  createdAt: integer("created_at").notNull(),
  modifiedBy: text("modified_by"),
  modifiedAt: integer("modified_at"),
};

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
  /** The last token id copied in the copying phase. */
  cursor: text("cursor").notNull().default(""),
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
    type: text("type", { enum: ["private", "public", "management"] }).notNull(),
    /** JSON array of permission names. */
    permissions: text("permissions").notNull().default("[]"),
    /** JSON array of access rules. */
    rules: text("rules").notNull().default("[]"),
    ...audit,
  },
  (table) => [index("applications_tenant_created").on(table.tenantId, table.createdAt, table.id)],
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

export const idempotencyRecords = sqliteTable(
  "idempotency_records",
  {
    tenantId: text("tenant_id").notNull(),
    applicationId: text("application_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of method, path and body: a replay with another body is a conflict. */
    requestHash: text("request_hash").notNull(),
    status: integer("status"),
    /** The first response, encrypted under the tenant key (it may hold a new API key or token data). */
    response: text("response"),
    createdAt: integer("created_at").notNull(),
    /** When the earliest card cvc in the response must be gone from it (PCI DSS 3.3.1); null when it holds none. */
    cvcExpiresAt: integer("cvc_expires_at"),
    /**
     * The tokens the request detokenized and how it showed them, encrypted like the response (an id
     * chosen by an alias expression can be derived from data): a replay checks them again. Null when none.
     */
    detokenized: text("detokenized"),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.applicationId, table.key] }),
    index("idempotency_records_created").on(table.createdAt),
    index("idempotency_records_cvc_expires").on(table.cvcExpiresAt).where(sql`cvc_expires_at IS NOT NULL`),
  ],
);

export const tokens = sqliteTable(
  "tokens",
  {
    /** A random UUID or an id the client chose: unique within the tenant only. */
    id: text("id").notNull(),
    tenantId: text("tenant_id").notNull(),
    type: text("type").notNull(),
    /** AES-256-GCM ciphertext of the JSON-encoded data, with its key version. */
    ciphertext: text("ciphertext").notNull(),
    fingerprint: text("fingerprint").notNull(),
    fingerprintExpression: text("fingerprint_expression").notNull(),
    mask: text("mask"),
    /** JSON array of the search index expressions (not their values). */
    searchIndexes: text("search_indexes").notNull().default("[]"),
    /** JSON object; metadata is non-sensitive by contract. */
    metadata: text("metadata").notNull().default("{}"),
    /** JSON array of container paths, mirrored in token_containers for search. */
    containers: text("containers").notNull().default("[]"),
    expiresAt: integer("expires_at"),
    /** When a card's cvc must be gone from the data (PCI DSS 3.3.1); null when it holds none. */
    cvcExpiresAt: integer("cvc_expires_at"),
    /** The data-key version of the ciphertext, the fingerprint and the token's blind indexes, all written together. */
    keyVersion: integer("key_version").notNull().default(1),
    /**
     * The fingerprint the token had under the data-key version before its current one, while its
     * value is unchanged: a fingerprint a client saved keeps finding its token through one rotation.
     */
    previousFingerprint: text("previous_fingerprint"),
    ...audit,
    modifiedAt: integer("modified_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.id] }),
    index("tokens_tenant_key_version").on(table.tenantId, table.keyVersion),
    index("tokens_tenant_created").on(table.tenantId, table.createdAt, table.id),
    index("tokens_tenant_modified").on(table.tenantId, table.modifiedAt),
    index("tokens_tenant_fingerprint").on(table.tenantId, table.fingerprint, table.type),
    index("tokens_tenant_type").on(table.tenantId, table.type, table.createdAt),
    index("tokens_tenant_created_by").on(table.tenantId, table.createdBy),
    index("tokens_tenant_modified_by").on(table.tenantId, table.modifiedBy),
    index("tokens_expires").on(table.expiresAt).where(sql`expires_at IS NOT NULL`),
    index("tokens_cvc_expires").on(table.cvcExpiresAt).where(sql`cvc_expires_at IS NOT NULL`),
    index("tokens_tenant_previous_fingerprint").on(table.tenantId, table.previousFingerprint).where(sql`previous_fingerprint IS NOT NULL`),
  ],
);

export const tokenContainers = sqliteTable(
  "token_containers",
  {
    tenantId: text("tenant_id").notNull(),
    container: text("container").notNull(),
    tokenId: text("token_id").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.container, table.tokenId] }),
    index("token_containers_token").on(table.tenantId, table.tokenId),
  ],
);

export const tokenMetadata = sqliteTable(
  "token_metadata",
  {
    tenantId: text("tenant_id").notNull(),
    /** Lower-cased key and value: metadata search is case-insensitive. */
    key: text("key").notNull(),
    value: text("value").notNull(),
    tokenId: text("token_id").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.key, table.value, table.tokenId] }),
    index("token_metadata_token").on(table.tenantId, table.tokenId),
  ],
);

export const tokenSearchIndex = sqliteTable(
  "token_search_index",
  {
    tenantId: text("tenant_id").notNull(),
    /** Keyed HMAC of an evaluated search index, lower-cased. */
    blindIndex: text("blind_index").notNull(),
    tokenId: text("token_id").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.blindIndex, table.tokenId] }),
    index("token_search_index_token").on(table.tenantId, table.tokenId),
  ],
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
    ...audit,
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
    ...audit,
  },
  (table) => [index("reactor_formulas_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

export const reactors = sqliteTable(
  "reactors",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    name: text("name").notNull(),
    formulaId: text("formula_id").notNull(),
    /** Encrypted JSON object: reactor configuration often holds the partner's secrets. */
    configuration: text("configuration"),
    applicationId: text("application_id"),
    ...audit,
  },
  (table) => [
    index("reactors_tenant_created").on(table.tenantId, table.createdAt, table.id),
    index("reactors_tenant_formula").on(table.tenantId, table.formulaId),
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
    ...audit,
  },
  (table) => [index("webhooks_tenant_created").on(table.tenantId, table.createdAt, table.id)],
);

/**
 * The audit log (each tenant's data database): one hash chain per tenant. An entry's hash is the
 * keyed HMAC of its content and of the previous entry's hash; `seq` numbers the chain from 1 and is
 * unique per tenant, which is what lets only one writer extend the chain at a time (src/audit/writer.ts).
 */
export const auditLog = sqliteTable(
  "audit_log",
  {
    tenantId: text("tenant_id").notNull(),
    seq: integer("seq").notNull(),
    /** Chosen by the request that recorded the entry: a redelivered queue message is written once. */
    id: text("id").notNull(),
    actorId: text("actor_id"),
    actorType: text("actor_type").notNull(),
    /** The API key's id, when the request presented a known one. */
    credentialId: text("credential_id"),
    entityType: text("entity_type").notNull(),
    entityId: text("entity_id"),
    operation: text("operation").notNull(),
    message: text("message").notNull(),
    /** The outcome: the HTTP status the request answered. */
    status: integer("status").notNull(),
    traceId: text("trace_id").notNull(),
    createdAt: integer("created_at").notNull(),
    hash: text("hash").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.seq] }),
    uniqueIndex("audit_log_tenant_id").on(table.tenantId, table.id),
    index("audit_log_tenant_created").on(table.tenantId, table.createdAt),
    index("audit_log_tenant_entity").on(table.tenantId, table.entityType, table.entityId, table.seq),
  ],
);

/**
 * Each tenant's chain: its head (the last entry written) and its anchor (the last entry retention
 * purged), each with a MAC under the tenant's audit key so that neither can be moved: a cut tail or
 * a cut prefix breaks verification. Verification runs from the anchor to the head.
 */
export const auditChains = sqliteTable("audit_chains", {
  tenantId: text("tenant_id").primaryKey(),
  headSeq: integer("head_seq").notNull(),
  headHash: text("head_hash").notNull(),
  /** Null on chains written before heads carried a MAC, until their next append. */
  headMac: text("head_mac"),
  /**
   * The head the writer last found without a valid MAC and chained after (0: none since the chain
   * began): entries after it may have been cut before, so verification reports the link after it.
   */
  headMacSince: integer("head_mac_since").notNull().default(0),
  anchorSeq: integer("anchor_seq").notNull().default(0),
  anchorHash: text("anchor_hash").notNull().default(""),
  anchorMac: text("anchor_mac"),
});

/** Entries the queue could not take: written here by the request, chained later by the writer. */
export const auditPending = sqliteTable(
  "audit_pending",
  {
    tenantId: text("tenant_id").notNull(),
    id: text("id").notNull(),
    /** The queue message, as JSON: no sensitive value is ever in it. */
    entry: text("entry").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.id] })],
);
