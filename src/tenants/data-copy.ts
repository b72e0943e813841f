/**
 * Copying a tenant's data between data databases, for moves: raw D1 statements over the tables
 * that hold tenant data, rows travelling as JSON parameters (see tokens/storage-writes.ts). A step
 * reads at most STEP of rows, counted by their large columns first, so a worker never holds more
 * than that of one tenant; its writes are cut into chunks D1 takes as one value (db/chunks.ts).
 */

import { type ChunkLimits, chunked, jsonBytes } from "../db/chunks";
import { TOKEN_SIDE_TABLE_NAMES as SIDE_TABLES } from "../tokens/storage-writes";

type Row = Record<string, unknown>;

/**
 * What one step of a copy reads and writes at most: a token is up to 1 MiB of data (1.4 MB sealed),
 * so a hundred of the largest would pass a worker's 128 MB; 4 MB is eight of D1's values of a quarter
 * of its limit each, in one batch.
 */
export const STEP: ChunkLimits = { rows: 100, bytes: 4 * 1024 * 1024 };

/** A step of small rows (audit entries): as many as a chunk of the audit writer's (db/chunks.ts). */
const SMALL_ROWS_STEP: ChunkLimits = { rows: 1_000, bytes: STEP.bytes };

/** A row's key and how many bytes its large columns take, read before the row itself. */
export interface Sized {
  id: string;
  bytes: number;
}

/** What a token row takes, counted by its columns that can be large. */
const TOKEN_BYTES = "length(ciphertext) + length(metadata) + length(search_indexes) + length(containers) + coalesce(length(mask), 0)";

/** A step of rows, and whether rows may remain after it. */
export interface Step<T> {
  rows: T[];
  more: boolean;
}

/** The tenant's tokens after `cursor` by id: at most one STEP, and always the first. */
export async function tokensAfter(d1: D1Database, tenantId: string, cursor: string): Promise<Step<Sized>> {
  const { results } = await d1
    .prepare(`SELECT id, ${TOKEN_BYTES} AS bytes FROM tokens WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?`)
    .bind(tenantId, cursor, STEP.rows)
    .all<Sized>();
  return firstStep(results, STEP);
}

/** The first step within `limits` of `sized`, read as the first rows of a query limited to limits.rows. */
function firstStep<T extends { bytes: number }>(sized: T[], limits: ChunkLimits): Step<T> {
  const rows = chunked(sized, (row) => row.bytes, limits).next().value ?? [];
  return { rows, more: rows.length < sized.length || sized.length === limits.rows };
}

/** The tenant's tokens created or changed since `since`, after `cursor` by id: at most one STEP, and always the first. */
export async function tokensChangedAfter(d1: D1Database, tenantId: string, since: number, cursor: string): Promise<Step<Sized>> {
  const { results } = await d1
    .prepare(
      `SELECT id, ${TOKEN_BYTES} AS bytes FROM tokens WHERE tenant_id = ? AND id > ? AND (created_at >= ? OR modified_at >= ?) ORDER BY id LIMIT ?`,
    )
    .bind(tenantId, cursor, since, since, STEP.rows)
    .all<Sized>();
  return firstStep(results, STEP);
}

/** Writes the tokens and their side rows (read from `source`) into `target`, in one batch, replacing what it had of them. */
export async function copyTokens(source: D1Database, target: D1Database, tenantId: string, tokens: Sized[]): Promise<void> {
  if (tokens.length === 0) return;
  const ids = JSON.stringify(tokens.map((token) => token.id));
  const [rows, ...sides] = await source.batch([
    source.prepare("SELECT * FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))").bind(tenantId, ids),
    ...SIDE_TABLES.map((table) =>
      // Every column of a side table is in its primary key, so SQLite would rather read the tenant's
      // whole primary-key range (a covering index) than look the page's tokens up one by one.
      source
        .prepare(`SELECT * FROM ${table} INDEXED BY ${table}_token WHERE tenant_id = ? AND token_id IN (SELECT value FROM json_each(?))`)
        .bind(tenantId, ids),
    ),
  ]);
  await target.batch([
    ...SIDE_TABLES.map((table) =>
      target.prepare(`DELETE FROM ${table} WHERE tenant_id = ? AND token_id IN (SELECT value FROM json_each(?))`).bind(tenantId, ids),
    ),
    // Deleted, not replaced: a REPLACE removes the old row without firing the delete trigger that keeps token_counts.
    target.prepare("DELETE FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))").bind(tenantId, ids),
    ...insertRows(target, "tokens", rows!.results as Row[]),
    ...SIDE_TABLES.flatMap((table, i) => insertRows(target, table, sides[i]!.results as Row[])),
  ]);
}

/** The tenant's token ids in `d1` after `cursor`, at most `limit`. */
export async function tokenIdsAfter(d1: D1Database, tenantId: string, cursor: string, limit: number): Promise<string[]> {
  const { results } = await d1
    .prepare("SELECT id FROM tokens WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?")
    .bind(tenantId, cursor, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

/** Which of the ids `d1` no longer holds for the tenant. */
export async function missingTokenIds(d1: D1Database, tenantId: string, ids: string[]): Promise<string[]> {
  const { results } = await d1
    .prepare("SELECT id FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(tenantId, JSON.stringify(ids))
    .all<{ id: string }>();
  const held = new Set(results.map((row) => row.id));
  return ids.filter((id) => !held.has(id));
}

/** Deletes the tokens and their side rows. */
export async function deleteTokens(d1: D1Database, tenantId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const list = JSON.stringify(ids);
  await d1.batch([
    ...SIDE_TABLES.map((table) =>
      d1.prepare(`DELETE FROM ${table} WHERE tenant_id = ? AND token_id IN (SELECT value FROM json_each(?))`).bind(tenantId, list),
    ),
    d1.prepare("DELETE FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))").bind(tenantId, list),
  ]);
}

/**
 * With writes blocked: replaces the target's token intents of the tenant with the source's, a step at a
 * time (a public key may have made many; they live a day, so the move copies them last, not during the copy).
 */
export async function copyTokenIntents(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  await replaceInSteps(source, target, tenantId, { table: "token_intents", key: ["id"], bytes: "length(ciphertext)", limits: STEP });
}

/** Replaces the target's idempotency records of the tenant with the source's, a STEP at a time. */
export async function copyIdempotencyRecords(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  await replaceInSteps(source, target, tenantId, {
    table: "idempotency_records",
    key: ["application_id", "key"],
    bytes: "coalesce(length(response), 0) + coalesce(length(outcome), 0) + coalesce(length(detokenized), 0) + length(key)",
    limits: STEP,
  });
}

/** Replaces the target's async reactions of the tenant (a day, at most 100 of them open) with the source's, a STEP at a time. */
export async function copyReactorRequests(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  await replaceInSteps(source, target, tenantId, {
    table: "reactor_requests",
    key: ["id"],
    bytes: "coalesce(length(args), 0) + coalesce(length(result), 0) + coalesce(length(detokenized), 0)",
    limits: STEP,
  });
}

/**
 * Copies the tenant's audit entries after the last one the target holds, at most one STEP; whether
 * entries may remain. The log only grows at its end (retention trims its start, see
 * copyAuditChain), so the target's highest seq is the cursor.
 */
export async function copyAuditEntries(source: D1Database, target: D1Database, tenantId: string): Promise<boolean> {
  const copied = await target
    .prepare("SELECT coalesce(max(seq), 0) AS seq FROM audit_log WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ seq: number }>();
  const step = await stepAfter(source, tenantId, AUDIT_LOG, [copied?.seq ?? 0]);
  if (step.rows.length > 0) await target.batch(insertRows(target, "audit_log", step.rows));
  return step.more;
}

/**
 * With writes blocked: the tenant's chain (head and anchor) and its entries waiting in
 * audit_pending replace the target's, and entries retention purged from the source meanwhile go
 * from the target too.
 */
export async function copyAuditChain(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  await replaceInSteps(source, target, tenantId, { table: "audit_pending", key: ["id"], bytes: "length(entry)", limits: SMALL_ROWS_STEP });
  // The summary's rollup counts what the log holds: it moves with the entries copied so far.
  for (const rollup of AUDIT_ROLLUPS) await replaceInSteps(source, target, tenantId, rollup);
  const chain = await source.prepare("SELECT * FROM audit_chains WHERE tenant_id = ?").bind(tenantId).all<Row>();
  await target.batch([
    target.prepare("DELETE FROM audit_chains WHERE tenant_id = ?").bind(tenantId),
    ...insertRows(target, "audit_chains", chain.results),
    target.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq <= ?").bind(tenantId, Number(chain.results[0]?.anchor_seq ?? 0)),
  ]);
}

/** The audit log's hourly rollup (src/audit/rollup.ts), keyed by integer hours: a step starts below every hour. */
const AUDIT_ROLLUPS: SteppedTable[] = [
  { table: "audit_hourly", key: ["hour", "outcome"], start: [-1, -1], bytes: "8", limits: SMALL_ROWS_STEP },
  {
    table: "audit_entity_hourly",
    key: ["entity_type", "hour", "entity_id"],
    start: ["", -1, ""],
    bytes: "length(entity_id)",
    limits: SMALL_ROWS_STEP,
  },
];

/** The tables of a tenant's audit log, copied by moves. */
const AUDIT_TABLES = ["audit_log", "audit_chains", "audit_pending", ...AUDIT_ROLLUPS.map(({ table }) => table)];

/** The tenant's row count in every table that holds tenant data. */
export async function tenantRowCounts(d1: D1Database, tenantId: string): Promise<Record<string, number>> {
  const tables = ["tokens", ...SIDE_TABLES, "token_intents", "idempotency_records", "reactor_requests", ...AUDIT_TABLES];
  const results = await d1.batch(
    tables.map((table) => d1.prepare(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(tenantId)),
  );
  return Object.fromEntries(tables.map((table, i) => [table, (results[i]!.results[0] as { n: number }).n]));
}

/**
 * Deletes up to `limit` of the tenant's rows: its tokens (with their side rows) first, then its token
 * intents, then its audit entries, then the rest once nothing else is left. Answers `limit` while there may be more.
 */
export async function purgeTenantData(d1: D1Database, tenantId: string, limit: number): Promise<number> {
  const ids = await tokenIdsAfter(d1, tenantId, "", limit);
  await deleteTokens(d1, tenantId, ids);
  if (ids.length === limit) return limit;
  const intents = await d1
    .prepare("DELETE FROM token_intents WHERE tenant_id = ?1 AND id IN (SELECT id FROM token_intents WHERE tenant_id = ?1 LIMIT ?2)")
    .bind(tenantId, limit)
    .run();
  if (intents.meta.changes === limit) return limit;
  const { meta } = await d1
    .prepare("DELETE FROM audit_log WHERE tenant_id = ?1 AND seq IN (SELECT seq FROM audit_log WHERE tenant_id = ?1 ORDER BY seq LIMIT ?2)")
    .bind(tenantId, limit)
    .run();
  if (meta.changes === limit) return limit;
  await d1.batch(
    ["idempotency_records", "reactor_requests", "audit_chains", "audit_pending", ...AUDIT_ROLLUPS.map(({ table }) => table)].map((table) =>
      d1.prepare(`DELETE FROM ${table} WHERE tenant_id = ?`).bind(tenantId),
    ),
  );
  return ids.length + intents.meta.changes + meta.changes;
}

/** A table copied in steps: its key after tenant_id, what a row takes (counted by its large columns), and a step's limits. */
interface SteppedTable {
  table: string;
  key: string[];
  /** Key values below every row's, where a copy starts: by default the empty text, below every text key. */
  start?: unknown[];
  bytes: string;
  limits: ChunkLimits;
}

const AUDIT_LOG: SteppedTable = {
  table: "audit_log",
  key: ["seq"],
  bytes: "length(message) + coalesce(length(entity_id), 0) + length(trace_id) + length(hash) + length(id)",
  limits: SMALL_ROWS_STEP,
};

/** The rows after `after` (values of the table's key) in key order: at most one STEP, and always the first. */
async function stepAfter(
  d1: D1Database,
  tenantId: string,
  { table, key, bytes, limits }: SteppedTable,
  after: unknown[],
): Promise<Step<Row>> {
  const keys = key.join(", ");
  const placeholders = key.map(() => "?").join(", ");
  const { results: sizes } = await d1
    .prepare(
      `SELECT ${keys}, ${bytes} AS bytes FROM ${table} WHERE tenant_id = ? AND (${keys}) > (${placeholders}) ORDER BY ${keys} LIMIT ?`,
    )
    .bind(tenantId, ...after, limits.rows)
    .all<Row & { bytes: number }>();
  const step = firstStep(sizes, limits);
  if (step.rows.length === 0) return { rows: [], more: false };
  const last = key.map((column) => step.rows.at(-1)![column]);
  const { results } = await d1
    .prepare(
      `SELECT * FROM ${table} WHERE tenant_id = ? AND (${keys}) > (${placeholders}) AND (${keys}) <= (${placeholders}) ORDER BY ${keys}`,
    )
    .bind(tenantId, ...after, ...last)
    .all<Row>();
  return { rows: results, more: step.more };
}

/**
 * Replaces the target's rows of the tenant in `table` with the source's, a step a batch. Called with
 * the tenant's writes blocked; a copy cut short is done again whole by the next call.
 */
async function replaceInSteps(source: D1Database, target: D1Database, tenantId: string, table: SteppedTable): Promise<void> {
  await target.prepare(`DELETE FROM ${table.table} WHERE tenant_id = ?`).bind(tenantId).run();
  let after: unknown[] = table.start ?? table.key.map(() => "");
  for (;;) {
    const { rows, more } = await stepAfter(source, tenantId, table, after);
    if (rows.length > 0) await target.batch(insertRows(target, table.table, rows));
    if (!more) return;
    after = table.key.map((column) => rows.at(-1)![column]);
  }
}

/** Statements inserting the rows, each with a JSON parameter D1 takes (none for no rows). */
function insertRows(d1: D1Database, table: string, rows: Row[]): D1PreparedStatement[] {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]!);
  const statement = d1.prepare(
    `INSERT OR REPLACE INTO ${table} (${columns.join(", ")}) SELECT ${columns.map((column) => `value ->> '${column}'`).join(", ")} FROM json_each(?)`,
  );
  return [...chunked(rows, (row) => jsonBytes(JSON.stringify(row)))].map((chunk) => statement.bind(JSON.stringify(chunk)));
}
