import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { auditColumns } from "./columns";

/*
 * The data databases' tables (bindings DB_1 … DB_N, or DB alone): each tenant's tokens with their
 * search side tables, its idempotency records and its audit log, in the database the directory names.
 * Every table that holds tenant data starts its primary key or first index with tenant_id, and every
 * query filters on it first. Times are integer milliseconds since the epoch so ranges use an index.
 */

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
    /**
     * When the request that holds the key claimed it: a lease of IDEMPOTENCY_LEASE_MS, after which a
     * retry may take it over, and the token a commit mark checks that its request still holds it.
     */
    claimedAt: integer("claimed_at").notNull().default(0),
    /**
     * The request's write carries this record's commit mark in its own batch (POST /tokens, /tokenize):
     * an unanswered claim without a mark wrote nothing, so a retry past the lease runs it again.
     */
    commitsWithWrite: integer("commits_with_write", { mode: "boolean" }).notNull().default(false),
    /**
     * The commit mark: what the request's write did, sealed like the response (it names tokens), written
     * in the write's batch. With no response saved, the answer is made again from it.
     */
    outcome: text("outcome"),
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

/**
 * Async reactions (POST /reactors/{id}/react-async), one row per request, each run once by the
 * reactor queue's consumer: pending → running (claimed) → completed or failed. Everything drawn from
 * data is sealed under the tenant key, and the row is gone at `expires_at` (the cron purges it).
 */
export const reactorRequests = sqliteTable(
  "reactor_requests",
  {
    tenantId: text("tenant_id").notNull(),
    id: text("id").notNull(),
    reactorId: text("reactor_id").notNull(),
    /** The application whose key asked for the reaction. */
    applicationId: text("application_id").notNull(),
    status: text("status", { enum: ["pending", "running", "completed", "failed"] }).notNull(),
    /** The args, detokenized and checked, with the values they revealed: sealed, and cleared once the run ends. */
    args: text("args"),
    /** The answer, sealed: `{tokens, raw}` when completed, the problem when failed. */
    result: text("result"),
    /** The tokens the request detokenized and how it showed them, sealed like idempotency_records.detokenized: a read checks them again. */
    detokenized: text("detokenized"),
    createdAt: integer("created_at").notNull(),
    /** When the consumer claimed it: a run holds its claim for REACTOR_RUN_LEASE_MS. */
    startedAt: integer("started_at"),
    completedAt: integer("completed_at"),
    /** The end of its retention, or earlier: the deadline of a card cvc it detokenized or answers. */
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.id] }),
    index("reactor_requests_expires").on(table.expiresAt),
    index("reactor_requests_open").on(table.tenantId, table.createdAt).where(sql`status IN ('pending', 'running')`),
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
    ...auditColumns,
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

/**
 * How many tokens the tenant holds of each type, and when the newest of them was created (GET
 * /tenants/self/reports/usage). Kept by triggers on tokens (migrations/0024_token_counts.sql), so
 * every write path, the copies and purges of moves and shredding included, keeps it true in the
 * statement that changes the tokens. A type's row goes when its last token does.
 */
export const tokenCounts = sqliteTable(
  "token_counts",
  {
    tenantId: text("tenant_id").notNull(),
    type: text("type").notNull(),
    count: integer("count").notNull(),
    lastCreatedAt: integer("last_created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.type] })],
);

/** How many tokens each container holds (exactly that container, not its sub-containers), kept like token_counts by triggers on token_containers. */
export const containerCounts = sqliteTable(
  "container_counts",
  {
    tenantId: text("tenant_id").notNull(),
    container: text("container").notNull(),
    count: integer("count").notNull(),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.container] })],
);

/**
 * Token intents (src/token-intents/): data a key collected, held for a short while before a private
 * key converts it into a token. Only the type and times are in the clear; card facts and the
 * fingerprint are computed from the data when an intent is shown.
 */
export const tokenIntents = sqliteTable(
  "token_intents",
  {
    tenantId: text("tenant_id").notNull(),
    /** A random UUID. */
    id: text("id").notNull(),
    type: text("type").notNull(),
    /** AES-256-GCM ciphertext of the JSON-encoded data under the tenant's data key, with its key version. */
    ciphertext: text("ciphertext").notNull(),
    createdBy: text("created_by").notNull(),
    createdAt: integer("created_at").notNull(),
    /** After this the intent is unknown everywhere; the cron deletes it. */
    expiresAt: integer("expires_at").notNull(),
    /** When a card's cvc must be gone from the data (PCI DSS 3.3.1), as for tokens; null when it holds none. */
    cvcExpiresAt: integer("cvc_expires_at"),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.id] }),
    index("token_intents_expires").on(table.expiresAt),
    index("token_intents_cvc_expires").on(table.cvcExpiresAt).where(sql`cvc_expires_at IS NOT NULL`),
  ],
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
    // GET /logs filtered by entity id (its type tested on each of the entity's entries) or by entity type alone, in the list's order.
    index("audit_log_tenant_entity").on(table.tenantId, table.entityId, table.createdAt, table.seq),
    index("audit_log_tenant_entity_type").on(table.tenantId, table.entityType, table.createdAt, table.seq),
    // GET /logs filtered by actor or by operation: a page is the next size+1 entries of one index range, in the list's order.
    index("audit_log_tenant_actor").on(table.tenantId, table.actorId, table.createdAt, table.seq),
    index("audit_log_tenant_operation").on(table.tenantId, table.operation, table.createdAt, table.seq),
    // The recent errors of GET /logs/summary: a tenant's newest failures without reading its successes.
    index("audit_log_tenant_errors").on(table.tenantId, table.createdAt).where(sql`status >= 400`),
  ],
);

/**
 * The audit log's hourly rollup (GET /logs/summary): the requests each hour by outcome class
 * (2, 3, 4, 5 for 2xx …), counted from the request's own entries only (one per request, not the
 * entries of the tokens it used). The audit writer adds a chunk's counts in the batch that appends
 * it, so the rollup holds exactly the entries the log holds; the cron drops hours past the longest
 * window, and moves copy and purge it with the log.
 */
export const auditHourly = sqliteTable(
  "audit_hourly",
  {
    tenantId: text("tenant_id").notNull(),
    /** The hour's start, in milliseconds since the epoch. */
    hour: integer("hour").notNull(),
    outcome: integer("outcome").notNull(),
    requests: integer("requests").notNull(),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.hour, table.outcome] }), index("audit_hourly_hour").on(table.hour)],
);

/** Calls and failed calls each hour of each proxy invoked and reactor run, kept as audit_hourly is. */
export const auditEntityHourly = sqliteTable(
  "audit_entity_hourly",
  {
    tenantId: text("tenant_id").notNull(),
    /** proxy or reactor. */
    entityType: text("entity_type").notNull(),
    hour: integer("hour").notNull(),
    entityId: text("entity_id").notNull(),
    calls: integer("calls").notNull(),
    /** Calls answered with a status of 400 or more. */
    errors: integer("errors").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tenantId, table.entityType, table.hour, table.entityId] }),
    index("audit_entity_hourly_hour").on(table.hour),
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

/**
 * The write fence (src/db/write-fence.ts): a tenant is here while a move blocks its writes to this
 * database, and after the move left it. Every write batch of the tenant's data checks this table in
 * the batch itself, so the database refuses a write that arrives once the move has fenced it.
 */
export const writeFences = sqliteTable("write_fences", {
  tenantId: text("tenant_id").primaryKey(),
  fencedAt: integer("fenced_at").notNull(),
});
