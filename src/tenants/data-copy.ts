/**
 * Copying a tenant's data between data databases, for moves: raw D1 statements over the tables
 * that hold tenant data, rows travelling as one JSON parameter (see tokens/storage-writes.ts).
 */

import { TOKEN_SIDE_TABLE_NAMES as SIDE_TABLES } from "../tokens/storage-writes";

type Row = Record<string, unknown>;

/** The tenant's tokens after `cursor` by id, at most `limit`. */
export async function tokensAfter(d1: D1Database, tenantId: string, cursor: string, limit: number): Promise<Row[]> {
  const { results } = await d1
    .prepare("SELECT * FROM tokens WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?")
    .bind(tenantId, cursor, limit)
    .all<Row>();
  return results;
}

/** The tenant's tokens created or changed since `since`. */
export async function tokensChangedSince(d1: D1Database, tenantId: string, since: number): Promise<Row[]> {
  const { results } = await d1
    .prepare("SELECT * FROM tokens WHERE tenant_id = ? AND (created_at >= ? OR modified_at >= ?) ORDER BY id")
    .bind(tenantId, since, since)
    .all<Row>();
  return results;
}

/** Writes the tokens and their side rows (read from `source`) into `target`, replacing what it had of them. */
export async function copyTokens(source: D1Database, target: D1Database, tenantId: string, tokens: Row[]): Promise<void> {
  if (tokens.length === 0) return;
  const ids = JSON.stringify(tokens.map((token) => token.id));
  const sides = await source.batch(
    SIDE_TABLES.map((table) =>
      // Every column of a side table is in its primary key, so SQLite would rather read the tenant's
      // whole primary-key range (a covering index) than look the page's tokens up one by one.
      source
        .prepare(`SELECT * FROM ${table} INDEXED BY ${table}_token WHERE tenant_id = ? AND token_id IN (SELECT value FROM json_each(?))`)
        .bind(tenantId, ids),
    ),
  );
  await target.batch([
    ...SIDE_TABLES.map((table) =>
      target.prepare(`DELETE FROM ${table} WHERE tenant_id = ? AND token_id IN (SELECT value FROM json_each(?))`).bind(tenantId, ids),
    ),
    insertRows(target, "tokens", tokens),
    ...SIDE_TABLES.flatMap((table, i) => {
      const rows = sides[i]!.results as Row[];
      return rows.length === 0 ? [] : [insertRows(target, table, rows)];
    }),
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

/** Token intents copied per statement. */
const INTENT_PAGE = 500;

/**
 * With writes blocked: replaces the target's token intents of the tenant with the source's, page by page
 * (a public key may have made many; they live a day, so the move copies them last, not during the copy).
 */
export async function copyTokenIntents(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  await target.prepare("DELETE FROM token_intents WHERE tenant_id = ?").bind(tenantId).run();
  for (let cursor = ""; ; ) {
    const { results } = await source
      .prepare("SELECT * FROM token_intents WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?")
      .bind(tenantId, cursor, INTENT_PAGE)
      .all<Row>();
    if (results.length === 0) return;
    await target.batch([insertRows(target, "token_intents", results)]);
    cursor = String(results.at(-1)!.id);
  }
}

/** Replaces the target's idempotency records of the tenant with the source's. */
export async function copyIdempotencyRecords(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  const { results } = await source.prepare("SELECT * FROM idempotency_records WHERE tenant_id = ?").bind(tenantId).all<Row>();
  await target.batch([
    target.prepare("DELETE FROM idempotency_records WHERE tenant_id = ?").bind(tenantId),
    ...(results.length === 0 ? [] : [insertRows(target, "idempotency_records", results)]),
  ]);
}

/**
 * Copies the tenant's audit entries after the last one the target holds, at most `limit`; how many.
 * The log only grows at its end (retention trims its start, see copyAuditChain), so the target's
 * highest seq is the cursor.
 */
export async function copyAuditEntries(source: D1Database, target: D1Database, tenantId: string, limit: number): Promise<number> {
  const copied = await target
    .prepare("SELECT coalesce(max(seq), 0) AS seq FROM audit_log WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ seq: number }>();
  const { results } = await source
    .prepare("SELECT * FROM audit_log WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?")
    .bind(tenantId, copied?.seq ?? 0, limit)
    .all<Row>();
  if (results.length > 0) await target.batch([insertRows(target, "audit_log", results)]);
  return results.length;
}

/**
 * With writes blocked: the tenant's chain (head and anchor) and its entries waiting in
 * audit_pending replace the target's, and entries retention purged from the source meanwhile go
 * from the target too.
 */
export async function copyAuditChain(source: D1Database, target: D1Database, tenantId: string): Promise<void> {
  const [chains, pending] = await source.batch([
    source.prepare("SELECT * FROM audit_chains WHERE tenant_id = ?").bind(tenantId),
    source.prepare("SELECT * FROM audit_pending WHERE tenant_id = ?").bind(tenantId),
  ]);
  const chain = chains!.results as Row[];
  const waiting = pending!.results as Row[];
  await target.batch([
    target.prepare("DELETE FROM audit_chains WHERE tenant_id = ?").bind(tenantId),
    ...(chain.length === 0 ? [] : [insertRows(target, "audit_chains", chain)]),
    target.prepare("DELETE FROM audit_pending WHERE tenant_id = ?").bind(tenantId),
    ...(waiting.length === 0 ? [] : [insertRows(target, "audit_pending", waiting)]),
    target.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq <= ?").bind(tenantId, Number(chain[0]?.anchor_seq ?? 0)),
  ]);
}

/** The tables of a tenant's audit log, copied by moves. */
const AUDIT_TABLES = ["audit_log", "audit_chains", "audit_pending"];

/** The tenant's row count in every table that holds tenant data. */
export async function tenantRowCounts(d1: D1Database, tenantId: string): Promise<Record<string, number>> {
  const tables = ["tokens", ...SIDE_TABLES, "token_intents", "idempotency_records", ...AUDIT_TABLES];
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
    ["idempotency_records", "audit_chains", "audit_pending"].map((table) =>
      d1.prepare(`DELETE FROM ${table} WHERE tenant_id = ?`).bind(tenantId),
    ),
  );
  return ids.length + intents.meta.changes + meta.changes;
}

function insertRows(d1: D1Database, table: string, rows: Row[]): D1PreparedStatement {
  const columns = Object.keys(rows[0]!);
  return d1
    .prepare(
      `INSERT OR REPLACE INTO ${table} (${columns.join(", ")}) SELECT ${columns.map((column) => `value ->> '${column}'`).join(", ")} FROM json_each(?)`,
    )
    .bind(JSON.stringify(rows));
}
