import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import { tokenContainers, tokenMetadata, tokens, tokenSearchIndex } from "../db/schema";

/*
 * The write side of tokens, as prepared D1 statements for one batch (one transaction). Rows travel
 * as one JSON parameter per table and are unpacked by json_each, so a tokenize of 100 tokens is
 * four statements, and D1's limit of 100 bound parameters per statement never applies.
 */

export type TokenRow = typeof tokens.$inferSelect;

/** A token row and the rows of its side tables, which make each search term an index lookup. */
export interface SealedToken {
  row: TokenRow;
  /** Lower-cased, de-duplicated (key, value) pairs. */
  metadata: [string, string][];
  /** Keyed HMACs of the evaluated search indexes, de-duplicated. */
  blindIndexes: string[];
}

const SIDE_TABLES = [tokenContainers, tokenMetadata, tokenSearchIndex] as const;
const PURGE_CHUNK = 500;

/**
 * Inserts the tokens. `chosenIds` (ids the client chose) may still be held by expired tokens that
 * the cron has not purged yet: those go first, since an expired token behaves as deleted.
 */
export function insertTokens(d1: D1Database, sealed: SealedToken[], chosenIds: string[], now: number): D1PreparedStatement[] {
  const tenantId = sealed[0]!.row.tenantId;
  const expired = "SELECT id FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?)) AND expires_at <= ?";
  const release =
    chosenIds.length === 0
      ? []
      : [
          ...SIDE_TABLES.map((table) =>
            d1
              .prepare(`DELETE FROM ${getTableName(table)} WHERE tenant_id = ? AND token_id IN (${expired})`)
              .bind(tenantId, tenantId, JSON.stringify(chosenIds), now),
          ),
          d1.prepare(`DELETE FROM tokens WHERE tenant_id = ? AND id IN (${expired})`).bind(tenantId, tenantId, JSON.stringify(chosenIds), now),
        ];
  return [
    ...release,
    insertFromJson(d1, tokens, sealed.map((token) => columnsOf(tokens, token.row))),
    ...insertSideRows(d1, sealed),
  ];
}

/** Which of the ids live tokens of the tenant hold (expired tokens hold none). */
export async function liveTokenIds(d1: D1Database, tenantId: string, ids: string[], now: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { results } = await d1
    .prepare(
      "SELECT id FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?)) AND (expires_at IS NULL OR expires_at > ?)",
    )
    .bind(tenantId, JSON.stringify(ids), now)
    .all<{ id: string }>();
  return new Set(results.map((row) => row.id));
}

/** A concurrent insert took one of the ids between the check and the write. */
export function isTakenIdError(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed: tokens\.tenant_id, tokens\.id/.test(error.message);
}

/**
 * Replaces a token's row and side rows, but only if the row still holds `readCiphertext`: a token
 * deleted or changed since it was read is left alone (the update then reports no change). The side
 * statements check for the new ciphertext, whose random IV makes it unique to this write.
 */
export function replaceToken(d1: D1Database, token: SealedToken, readCiphertext: string): D1PreparedStatement[] {
  const { row } = token;
  const written = "EXISTS (SELECT 1 FROM tokens WHERE tenant_id = ? AND id = ? AND ciphertext = ?)";
  const writtenParams = [row.tenantId, row.id, row.ciphertext];
  const update = d1
    .prepare(
      `UPDATE tokens SET ciphertext = ?, fingerprint = ?, fingerprint_expression = ?, mask = ?, search_indexes = ?,
         metadata = ?, containers = ?, expires_at = ?, modified_by = ?, modified_at = ?
       WHERE tenant_id = ? AND id = ? AND ciphertext = ?`,
    )
    .bind(
      row.ciphertext,
      row.fingerprint,
      row.fingerprintExpression,
      row.mask,
      row.searchIndexes,
      row.metadata,
      row.containers,
      row.expiresAt,
      row.modifiedBy,
      row.modifiedAt,
      row.tenantId,
      row.id,
      readCiphertext,
    );
  const clear = SIDE_TABLES.map((table) =>
    d1
      .prepare(`DELETE FROM ${getTableName(table)} WHERE tenant_id = ? AND token_id = ? AND ${written}`)
      .bind(row.tenantId, row.id, ...writtenParams),
  );
  return [update, ...clear, ...insertSideRows(d1, [token], { condition: written, params: writtenParams })];
}

/** The live token's side rows, then its row; the last statement's change count says whether it existed. */
export function deleteToken(d1: D1Database, tenantId: string, id: string, now: number): D1PreparedStatement[] {
  return [
    ...SIDE_TABLES.map((table) =>
      d1.prepare(`DELETE FROM ${getTableName(table)} WHERE tenant_id = ? AND token_id = ?`).bind(tenantId, id),
    ),
    d1
      .prepare("DELETE FROM tokens WHERE tenant_id = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)")
      .bind(tenantId, id, now),
  ];
}

/**
 * Removes tokens whose expiry has passed, with their side rows, in batches of a bounded size so
 * no single transaction grows without limit. Expired tokens are already invisible to every read.
 */
export async function purgeExpiredTokens(d1: D1Database, now: number): Promise<number> {
  // Ids are unique per tenant only, so rows are matched on the pair.
  const expired = "SELECT tenant_id, id FROM tokens WHERE expires_at <= ? ORDER BY expires_at, tenant_id, id LIMIT ?";
  let purged = 0;
  for (;;) {
    const results = await d1.batch([
      ...SIDE_TABLES.map((table) =>
        d1.prepare(`DELETE FROM ${getTableName(table)} WHERE (tenant_id, token_id) IN (${expired})`).bind(now, PURGE_CHUNK),
      ),
      d1.prepare(`DELETE FROM tokens WHERE (tenant_id, id) IN (${expired})`).bind(now, PURGE_CHUNK),
    ]);
    const deleted = results.at(-1)?.meta.changes ?? 0;
    purged += deleted;
    if (deleted < PURGE_CHUNK) return purged;
  }
}

function insertSideRows(
  d1: D1Database,
  sealed: SealedToken[],
  guard?: { condition: string; params: unknown[] },
): D1PreparedStatement[] {
  const containers = sealed.flatMap(({ row }) =>
    (JSON.parse(row.containers) as string[]).map((container) => ({ tenant_id: row.tenantId, container, token_id: row.id })),
  );
  const metadata = sealed.flatMap(({ row, metadata }) =>
    metadata.map(([key, value]) => ({ tenant_id: row.tenantId, key, value, token_id: row.id })),
  );
  const searchIndex = sealed.flatMap(({ row, blindIndexes }) =>
    blindIndexes.map((blindIndex) => ({ tenant_id: row.tenantId, blind_index: blindIndex, token_id: row.id })),
  );
  return [
    insertFromJson(d1, tokenContainers, containers, guard),
    ...(metadata.length > 0 ? [insertFromJson(d1, tokenMetadata, metadata, guard)] : []),
    ...(searchIndex.length > 0 ? [insertFromJson(d1, tokenSearchIndex, searchIndex, guard)] : []),
  ];
}

/** `INSERT INTO table (columns) SELECT … FROM json_each(?)`: the column list comes from the drizzle schema. */
function insertFromJson(
  d1: D1Database,
  table: Table,
  rows: Record<string, unknown>[],
  guard?: { condition: string; params: unknown[] },
): D1PreparedStatement {
  const columns = Object.values(getTableColumns(table)).map((column) => column.name);
  const statement =
    `INSERT INTO ${getTableName(table)} (${columns.join(", ")}) ` +
    `SELECT ${columns.map((column) => `value ->> '${column}'`).join(", ")} FROM json_each(?)` +
    (guard ? ` WHERE ${guard.condition}` : "");
  return d1.prepare(statement).bind(JSON.stringify(rows), ...(guard?.params ?? []));
}

/** The row keyed by SQL column names, as insertFromJson reads it. */
function columnsOf(table: Table, row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(getTableColumns(table)).map(([property, column]) => [column.name, row[property] ?? null]),
  );
}
