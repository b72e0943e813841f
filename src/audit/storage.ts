/**
 * The audit tables (each data database): audit_log, audit_chains and audit_pending. The writer uses
 * plain D1 statements; an append inserts its entries in one statement that reads them from one JSON
 * parameter, since a multi-row VALUES would bind more parameters than D1 allows. That parameter is
 * one value, which D1 bounds too: callers append chunks (src/db/chunks.ts), sized by
 * `loggedBytes`, and keepPending's by pendingChunks.
 */
import { and, desc, eq, gte, lt, type SQL, sql } from "drizzle-orm";
import { chunked, jsonBytes } from "../db/chunks";
import type { Database } from "../db/client";
import { auditLog } from "../db/data-tables";
import { selectPage } from "../db/pages";
import { fencedBatch, type WriteFence } from "../db/write-fence";
import { CHAINED_COLUMNS, type ChainedEntry, chainedValues } from "./chain";
import type { AuditEntry } from "./entry";
import { rollupStatements } from "./rollup";

export interface Chain {
  headSeq: number;
  headHash: string;
  headMac: string | null;
  headMacSince: number;
  anchorSeq: number;
  anchorHash: string;
  anchorMac: string | null;
}

/**
 * The tenant's chain (null before its first entry), up to `pendingLimit` of its entries waiting in
 * audit_pending (the oldest), and which of `ids` and of those waiting are already written, in one
 * round trip.
 */
export async function chainState(
  d1: D1Database,
  tenantId: string,
  ids: string[],
  pendingLimit = 0,
): Promise<{ chain: Chain | null; written: Set<string>; pending: AuditEntry[] }> {
  const [chains, written, pending] = await d1.batch([
    d1.prepare(SELECT_CHAIN).bind(tenantId),
    d1
      // Waiting entries may be written already: a queue send can fail after the queue took it. Only
      // those read here are looked up, so that draining a long audit_pending costs each chunk its own.
      .prepare(
        `SELECT id FROM audit_log WHERE tenant_id = ?1 AND (id IN (SELECT value FROM json_each(?2))
           OR id IN (SELECT id FROM audit_pending WHERE tenant_id = ?1 ORDER BY created_at, id LIMIT ?3))`,
      )
      .bind(tenantId, JSON.stringify(ids), pendingLimit),
    d1.prepare("SELECT entry FROM audit_pending WHERE tenant_id = ? ORDER BY created_at, id LIMIT ?").bind(tenantId, pendingLimit),
  ]);
  return {
    chain: (chains!.results[0] as Chain | undefined) ?? null,
    written: new Set((written!.results as { id: string }[]).map(({ id }) => id)),
    pending: (pending!.results as { entry: string }[]).map(({ entry }) => JSON.parse(entry) as AuditEntry),
  };
}

const SELECT_CHAIN = `SELECT head_seq AS headSeq, head_hash AS headHash, head_mac AS headMac, head_mac_since AS headMacSince,
  anchor_seq AS anchorSeq, anchor_hash AS anchorHash, anchor_mac AS anchorMac FROM audit_chains WHERE tenant_id = ?`;

/** A chain's head as the writer moves it: the new last entry, with its MAC. */
export interface SealedHead {
  seq: number;
  hash: string;
  macSince: number;
  mac: string;
}

/**
 * Appends chained entries and moves the head, atomically: at most one chunk of them
 * (src/db/chunks.ts), as one JSON parameter carries them all. Two writers that read the same
 * head both number their first entry head+1, and (tenant_id, seq) is the primary key: the second
 * batch fails whole, and its writer starts again from the new head.
 */
export async function append(
  d1: D1Database,
  /** The tenant's write fence; null in the control database, which no move fences. */
  fence: WriteFence | null,
  tenantId: string,
  chain: Chain | null,
  entries: ChainedEntry[],
  /** The head after the last of `entries` (null when none). */
  head: SealedHead | null,
  /** Ids of audit_pending rows these entries chain, removed in the same batch. */
  pendingIds: string[],
): Promise<void> {
  await fencedBatch(d1, fence, [
    // One statement for every entry: each statement of a batch costs D1 a round of its own.
    ...(entries.length > 0
      ? [d1.prepare(INSERT_ENTRIES).bind(JSON.stringify(entries.map((entry) => [...chainedValues(entry), entry.hash])))]
      : []),
    // The summary's counts, in the batch that writes what they count (rollup.ts).
    ...rollupStatements(d1, tenantId, entries),
    ...headMove(d1, tenantId, chain, head),
    ...(pendingIds.length > 0
      ? [
          d1
            .prepare("DELETE FROM audit_pending WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
            .bind(tenantId, JSON.stringify(pendingIds)),
        ]
      : []),
  ]);
}

/** The bytes an entry takes in an append's parameter, with its seq and hash at their longest: what a chunk of entries is measured by. */
export function loggedBytes(entry: AuditEntry): number {
  // A comma, the hash's 43 characters of base64url and its quotes.
  return jsonBytes(JSON.stringify(chainedValues({ ...entry, seq: Number.MAX_SAFE_INTEGER }))) + 46;
}

/** Rows from a JSON array of arrays, each the values of CHAINED_COLUMNS and the hash: `->>` keeps JSON's integers, text and nulls as SQL's. */
const INSERT_ENTRIES = `INSERT INTO audit_log (${CHAINED_COLUMNS.join(", ")}, hash) SELECT ${[...CHAINED_COLUMNS, "hash"]
  .map((_, index) => `value ->> '$[${index}]'`)
  .join(", ")} FROM json_each(?) ORDER BY key`;

/** The statement that moves the head (none when nothing is appended). */
function headMove(d1: D1Database, tenantId: string, chain: Chain | null, head: SealedHead | null): D1PreparedStatement[] {
  if (!head) return [];
  if (!chain) {
    return [
      d1
        .prepare("INSERT INTO audit_chains (tenant_id, head_seq, head_hash, head_mac, head_mac_since) VALUES (?, ?, ?, ?, ?)")
        .bind(tenantId, head.seq, head.hash, head.mac, head.macSince),
    ];
  }
  return [
    d1
      .prepare("UPDATE audit_chains SET head_seq = ?, head_hash = ?, head_mac = ?, head_mac_since = ? WHERE tenant_id = ? AND head_seq = ?")
      .bind(head.seq, head.hash, head.mac, head.macSince, tenantId, chain.headSeq),
  ];
}

/** The entries cut into the chunks keepPending takes, each one D1 value. */
export function pendingChunks(entries: AuditEntry[]): Generator<AuditEntry[]> {
  return chunked(entries, (entry) => jsonBytes(pendingRow(entry)) + 1);
}

const pendingRow = (entry: AuditEntry) => JSON.stringify([entry.tenant_id, entry.id, JSON.stringify(entry), entry.created_at]);

/**
 * Keeps a chunk of entries (pendingChunks) the queue could not take (or gave up on) until the writer
 * or the cron chains them, in one statement behind the tenant's write fence (null: in the control
 * database). An entry kept already is left as it is, so a chunk that fails is kept again whole by
 * the retry, and the chunks before it are not doubled.
 */
export async function keepPending(d1: D1Database, fence: WriteFence | null, chunk: AuditEntry[]): Promise<void> {
  await fencedBatch(d1, fence, [d1.prepare(INSERT_PENDING).bind(`[${chunk.map(pendingRow).join(",")}]`)]);
}

/** Removes the tenant's entries from audit_pending, once they were kept or chained elsewhere. */
export async function removePending(d1: D1Database, tenantId: string, ids: string[]): Promise<void> {
  await d1
    .prepare("DELETE FROM audit_pending WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(tenantId, JSON.stringify(ids))
    .run();
}

const INSERT_PENDING = `INSERT OR IGNORE INTO audit_pending (tenant_id, id, entry, created_at)
  SELECT value ->> '$[0]', value ->> '$[1]', value ->> '$[2]', value ->> '$[3]' FROM json_each(?)`;

/** Tenants with entries waiting in audit_pending, for the cron. */
export async function tenantsWithPending(d1: D1Database): Promise<string[]> {
  const { results } = await d1.prepare("SELECT DISTINCT tenant_id AS tenantId FROM audit_pending").all<{ tenantId: string }>();
  return results.map(({ tenantId }) => tenantId);
}

/** Entries of the chain in order, from `afterSeq` (exclusive) through `throughSeq`, for verification. */
export async function entriesAfter(
  d1: D1Database,
  tenantId: string,
  afterSeq: number,
  throughSeq: number,
  limit: number,
): Promise<ChainedEntry[]> {
  const { results } = await d1
    .prepare(
      "SELECT seq, id, tenant_id, actor_id, actor_type, credential_id, entity_type, entity_id, operation, message, status, trace_id, created_at, hash FROM audit_log WHERE tenant_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
    )
    .bind(tenantId, afterSeq, throughSeq, limit)
    .all<ChainedEntry>();
  return results;
}

/** The chain and what lies at its end, read in one batch so that a writer appending meanwhile cannot show entries past the head. */
export interface ChainEnd {
  chain: Chain | null;
  /** The stored hash of the entry at the head's seq (null when there is none). */
  headEntryHash: string | null;
  /** The first entry past the head, which the writer never leaves. */
  pastHead: { seq: number; id: string } | null;
  /** The first entry at or before the anchor, which retention purged: one there is no part of the chain. */
  beforeAnchor: { seq: number; id: string } | null;
  /** Entries kept in audit_pending, recorded but not chained yet. */
  pending: number;
}

export async function chainEnd(d1: D1Database, tenantId: string): Promise<ChainEnd> {
  const [chains, headEntries, pastHead, beforeAnchor, pending] = await d1.batch([
    d1.prepare(SELECT_CHAIN).bind(tenantId),
    d1
      .prepare("SELECT hash FROM audit_log WHERE tenant_id = ?1 AND seq = (SELECT head_seq FROM audit_chains WHERE tenant_id = ?1)")
      .bind(tenantId),
    d1
      .prepare(
        "SELECT seq, id FROM audit_log WHERE tenant_id = ?1 AND seq > coalesce((SELECT head_seq FROM audit_chains WHERE tenant_id = ?1), 0) ORDER BY seq LIMIT 1",
      )
      .bind(tenantId),
    d1
      .prepare(
        "SELECT seq, id FROM audit_log WHERE tenant_id = ?1 AND seq <= (SELECT anchor_seq FROM audit_chains WHERE tenant_id = ?1) ORDER BY seq LIMIT 1",
      )
      .bind(tenantId),
    d1.prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ?").bind(tenantId),
  ]);
  type EntryAt = { seq: number; id: string } | undefined;
  return {
    chain: (chains!.results[0] as Chain | undefined) ?? null,
    headEntryHash: (headEntries!.results[0] as { hash: string } | undefined)?.hash ?? null,
    pastHead: (pastHead!.results[0] as EntryAt) ?? null,
    beforeAnchor: (beforeAnchor!.results[0] as EntryAt) ?? null,
    pending: (pending!.results[0] as { n: number }).n,
  };
}

/** The chain's first seq at or after a time, for verifying a range. */
export async function firstSeqFrom(d1: D1Database, tenantId: string, createdAt: number): Promise<number | null> {
  const row = await d1
    .prepare("SELECT min(seq) AS seq FROM audit_log WHERE tenant_id = ? AND created_at >= ?")
    .bind(tenantId, createdAt)
    .first<{ seq: number | null }>();
  return row?.seq ?? null;
}

export async function chainOf(d1: D1Database, tenantId: string): Promise<Chain | null> {
  return (await chainState(d1, tenantId, [])).chain;
}

/** The hash of one entry, or null when it is missing. */
export async function hashAt(d1: D1Database, tenantId: string, seq: number): Promise<string | null> {
  const row = await d1.prepare("SELECT hash FROM audit_log WHERE tenant_id = ? AND seq = ?").bind(tenantId, seq).first<{ hash: string }>();
  return row?.hash ?? null;
}

export interface LogFilter {
  entityType?: string;
  entityId?: string;
  actorId?: string;
  operation?: string;
  startDate?: number;
  endDate?: number;
  page: number;
  size: number;
}

/** Where a cursor page of the log resumes: after this entry, in the list's order (created_at, seq) descending. */
export interface LogPosition {
  createdAt: number;
  seq: number;
}

function logFilterOf(tenantId: string, filter: Omit<LogFilter, "page" | "size">): SQL | undefined {
  return and(
    eq(auditLog.tenantId, tenantId),
    filter.entityType !== undefined ? entityTypeIs(filter.entityType, filter) : undefined,
    filter.entityId !== undefined ? eq(auditLog.entityId, filter.entityId) : undefined,
    filter.actorId !== undefined ? eq(auditLog.actorId, filter.actorId) : undefined,
    filter.operation !== undefined ? eq(auditLog.operation, filter.operation) : undefined,
    filter.startDate !== undefined ? gte(auditLog.createdAt, filter.startDate) : undefined,
    filter.endDate !== undefined ? lt(auditLog.createdAt, filter.endDate) : undefined,
  );
}

/**
 * The entity type filter. With an entity id, an actor or an operation beside it, the range of that
 * filter's index is narrower than the type's (a few types hold most of a log), so the type is
 * tested on each entry of that range: SQLite's unary `+` keeps audit_log_tenant_entity_type out of the plan.
 */
function entityTypeIs(entityType: string, filter: Omit<LogFilter, "page" | "size">): SQL {
  const narrower = filter.entityId !== undefined || filter.actorId !== undefined || filter.operation !== undefined;
  return narrower ? sql`+${auditLog.entityType} = ${entityType}` : eq(auditLog.entityType, entityType);
}

const NEWEST_FIRST = [desc(auditLog.createdAt), desc(auditLog.seq)];

/** A page of the tenant's entries, newest first. */
export function logPage(db: Database, tenantId: string, filter: LogFilter) {
  return selectPage(db, auditLog, logFilterOf(tenantId, filter), NEWEST_FIRST, filter);
}

/**
 * Up to `limit` of the tenant's entries after a position, newest first: a cursor page. Filtered by
 * entity id, actor, operation or entity type it reads one range of audit_log_tenant_entity,
 * _actor, _operation or _entity_type, which hold (created_at, seq) in the list's order, so it stops
 * after `limit` entries.
 */
export function logsAfter(db: Database, tenantId: string, filter: Omit<LogFilter, "page" | "size">, after: LogPosition, limit: number) {
  return db
    .select()
    .from(auditLog)
    .where(and(logFilterOf(tenantId, filter), sql`(${auditLog.createdAt}, ${auditLog.seq}) < (${after.createdAt}, ${after.seq})`))
    .orderBy(...NEWEST_FIRST)
    .limit(limit);
}

/** Tenants with a chain in this database, for retention. */
export async function chainedTenants(d1: D1Database): Promise<string[]> {
  const { results } = await d1.prepare("SELECT tenant_id AS tenantId FROM audit_chains").all<{ tenantId: string }>();
  return results.map(({ tenantId }) => tenantId);
}

/** The last entry of the longest prefix of the chain older than `cutoff`, at most `limit` entries past the anchor. */
export async function purgeBoundary(
  d1: D1Database,
  tenantId: string,
  anchorSeq: number,
  cutoff: number,
  limit: number,
): Promise<{ seq: number; hash: string } | null> {
  const row = await d1
    .prepare(
      `SELECT seq, hash FROM audit_log WHERE tenant_id = ?1 AND seq > ?2 AND seq <= ?2 + ?4 AND seq < coalesce(
         (SELECT min(seq) FROM audit_log WHERE tenant_id = ?1 AND seq > ?2 AND created_at >= ?3), 9223372036854775807)
       ORDER BY seq DESC LIMIT 1`,
    )
    .bind(tenantId, anchorSeq, cutoff, limit)
    .first<{ seq: number; hash: string }>();
  return row ?? null;
}

/** Deletes the chain's prefix up to `seq` and moves the anchor there, atomically. */
export async function purgeThrough(d1: D1Database, tenantId: string, seq: number, hash: string, mac: string): Promise<void> {
  await d1.batch([
    d1.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq <= ?").bind(tenantId, seq),
    d1
      .prepare("UPDATE audit_chains SET anchor_seq = ?, anchor_hash = ?, anchor_mac = ? WHERE tenant_id = ?")
      .bind(seq, hash, mac, tenantId),
  ]);
}
