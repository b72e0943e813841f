import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import { tokenContainers, tokenMetadata, tokenSearchIndex, tokens } from "../db/data-tables";
import { fencedBatch, type WriteFence } from "../db/write-fence";
import type { TokenRow } from "./storage";

/*
 * The write side of tokens, as prepared D1 statements for one batch (one transaction). Rows travel
 * as one JSON parameter per table and are unpacked by json_each, so a tokenize of 100 tokens is
 * four statements, and D1's limit of 100 bound parameters per statement never applies. Every batch
 * passes the tenant's write fence (src/db/write-fence.ts): a move's last copy must see what it wrote.
 */

/** A token row and the rows of its side tables, which make each search term an index lookup. */
export interface SealedToken {
  row: TokenRow;
  /**
   * Set for a deduplicating create: the row is inserted only if no live token of the tenant with the
   * same type and fingerprint lies in one of these container prefixes (null: in any container).
   */
  unlessDuplicateIn?: string[] | null;
  /** Lower-cased, de-duplicated (key, value) pairs. */
  metadata: [string, string][];
  /** Keyed HMACs of the evaluated search indexes, de-duplicated. */
  blindIndexes: string[];
  /**
   * The fingerprint under every data-key version the tenant holds (the row's own first): a
   * duplicate written under an older version still matches while a rotation runs.
   */
  fingerprints: string[];
}

export const SIDE_TABLES = [tokenContainers, tokenMetadata, tokenSearchIndex] as const;

/** The tables that hold a token's index rows, by name (for copies between databases). */
export const TOKEN_SIDE_TABLE_NAMES = SIDE_TABLES.map((table) => getTableName(table));

/**
 * Inserts the tokens. `chosenIds` (ids the client chose) may still be held by expired tokens that
 * the cron has not purged yet: those go first, since an expired token behaves as deleted. `with.last`
 * (an idempotency claim's commit mark, src/context.ts) goes last and `with.first` (a conversion's
 * consumption of its token intent) first, in the same batch: the tokens and those statements are
 * written together or not at all. They are written even when there is no token to insert.
 *
 * A deduplicating token (`unlessDuplicateIn`) is inserted by the same statement only when no
 * duplicate is live, and its side rows only when its row was inserted: D1 runs statements one at a
 * time, so of concurrent deduplicating creates of one value exactly one inserts. The check reads
 * only the tokens rows (their containers column), never the side rows a concurrent batch writes in
 * a later statement. Answers how many token rows went in.
 */
export async function insertTokens(
  d1: D1Database,
  fence: WriteFence,
  sealed: SealedToken[],
  chosenIds: string[],
  now: number,
  { first = [], last = [] }: { first?: D1PreparedStatement[]; last?: D1PreparedStatement[] } = {},
): Promise<number> {
  if (sealed.length === 0) {
    await fencedBatch(d1, fence, [...first, ...last]);
    return 0;
  }
  const results = await fencedBatch(d1, fence, [...first, ...insertStatements(d1, sealed, chosenIds, now), ...last]);
  // Rows returned, not meta.changes: D1 counts the rows the token_counts triggers write too.
  return results[first.length + tokensStatement(chosenIds)]?.results.length ?? 0;
}

function insertStatements(d1: D1Database, sealed: SealedToken[], chosenIds: string[], now: number): D1PreparedStatement[] {
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
          d1
            .prepare(`DELETE FROM tokens WHERE tenant_id = ? AND id IN (${expired})`)
            .bind(tenantId, tenantId, JSON.stringify(chosenIds), now),
        ];
  const guarded = sealed.some((token) => token.unlessDuplicateIn !== undefined);
  const insert = guarded
    ? insertUnlessDuplicate(d1, sealed, now)
    : insertFromJson(
        d1,
        tokens,
        sealed.map(({ row }) => columnsOf(tokens, row)),
        { returning: "id" },
      );
  return [...release, insert, ...insertSideRows(d1, sealed, guarded ? INSERTED_WITH_IT : undefined)];
}

/** Where the tokens statement sits in insertStatements' batch. */
function tokensStatement(chosenIds: string[]): number {
  return chosenIds.length === 0 ? 0 : SIDE_TABLES.length + 1;
}

/**
 * What a side row carries of its token's fresh ciphertext to find the row written with it: its start,
 * which holds the version and the random 96-bit IV (`v<n>.<16 characters>.…`), unique to that write.
 * The whole ciphertext in every side row made a token with 20 search indexes carry its data 21 times,
 * past what one D1 value holds.
 */
const SEALED_MARK_LENGTH = 64;
const sealedMark = (ciphertext: string) => ciphertext.slice(0, SEALED_MARK_LENGTH);

/** A side row goes in only with the token row it belongs to (matched on its fresh ciphertext's mark). */
const INSERTED_WITH_IT = {
  condition:
    "EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = value ->> 'tenant_id' AND t.id = value ->> 'token_id' " +
    `AND substr(t.ciphertext, 1, ${SEALED_MARK_LENGTH}) = value ->> 'sealed')`,
  params: [],
};

/**
 * One INSERT … SELECT whose WHERE refuses each deduplicating row that has a live duplicate (same
 * tenant, type and fingerprint) in one of its container prefixes; other rows go in as they are.
 */
function insertUnlessDuplicate(d1: D1Database, sealed: SealedToken[], now: number): D1PreparedStatement {
  const columns = Object.values(getTableColumns(tokens)).map((column) => column.name);
  const rows = sealed.map(({ row, unlessDuplicateIn, fingerprints }) => ({
    ...columnsOf(tokens, row),
    deduplicate: unlessDuplicateIn !== undefined,
    fingerprints: JSON.stringify(fingerprints),
    // null (any container) must stay SQL NULL: JSON.stringify(null) would be the text "null".
    scope: unlessDuplicateIn == null ? null : JSON.stringify(unlessDuplicateIn),
  }));
  const statement =
    `INSERT INTO tokens (${columns.join(", ")}) ` +
    `SELECT ${columns.map((column) => `j.value ->> '${column}'`).join(", ")} FROM json_each(?1) AS j ` +
    `WHERE NOT (j.value ->> 'deduplicate') OR NOT EXISTS (
       SELECT 1 FROM tokens t
       WHERE t.tenant_id = j.value ->> 'tenant_id' AND t.fingerprint IN (SELECT value FROM json_each(j.value ->> 'fingerprints')) AND t.type = j.value ->> 'type'
         AND (t.expires_at IS NULL OR t.expires_at > ?2)
         AND (j.value ->> 'scope' IS NULL OR EXISTS (
           SELECT 1 FROM json_each(t.containers) c, json_each(j.value ->> 'scope') p
           WHERE substr(c.value, 1, length(p.value)) = p.value))) RETURNING id`;
  return d1.prepare(statement).bind(JSON.stringify(rows), now);
}

/** Which of the tokens were written: their id holds their (fresh, unique) ciphertext. */
export async function writtenTokenIds(d1: D1Database, sealed: SealedToken[]): Promise<Set<string>> {
  const { results } = await d1
    .prepare("SELECT id, ciphertext FROM tokens WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(sealed[0]!.row.tenantId, JSON.stringify(sealed.map(({ row }) => row.id)))
    .all<{ id: string; ciphertext: string }>();
  const written = new Map(results.map((row) => [row.id, row.ciphertext]));
  return new Set(sealed.filter(({ row }) => written.get(row.id) === row.ciphertext).map(({ row }) => row.id));
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
export async function replaceToken(d1: D1Database, fence: WriteFence, token: SealedToken, readCiphertext: string): Promise<boolean> {
  return (await replaceTokens(d1, fence, [{ token, readCiphertext }])) === 1;
}

/** Replaces several tokens as replaceToken does, in one batch: how many were replaced. */
export async function replaceTokens(
  d1: D1Database,
  fence: WriteFence,
  replacements: { token: SealedToken; readCiphertext: string }[],
): Promise<number> {
  if (replacements.length === 0) return 0;
  const batches = replacements.map(({ token, readCiphertext }) => replaceStatements(d1, token, readCiphertext));
  const results = await fencedBatch(d1, fence, batches.flat());
  let offset = 0;
  let replaced = 0;
  for (const statements of batches) {
    replaced += results[offset]?.meta.changes === 1 ? 1 : 0;
    offset += statements.length;
  }
  return replaced;
}

function replaceStatements(d1: D1Database, token: SealedToken, readCiphertext: string): D1PreparedStatement[] {
  const { row } = token;
  const written = "EXISTS (SELECT 1 FROM tokens WHERE tenant_id = ? AND id = ? AND ciphertext = ?)";
  const writtenParams = [row.tenantId, row.id, row.ciphertext];
  const update = d1
    .prepare(
      `UPDATE tokens SET ciphertext = ?, fingerprint = ?, fingerprint_expression = ?, mask = ?, search_indexes = ?,
         metadata = ?, containers = ?, expires_at = ?, cvc_expires_at = ?, key_version = ?, previous_fingerprint = ?,
         modified_by = ?, modified_at = ?
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
      row.cvcExpiresAt,
      row.keyVersion,
      row.previousFingerprint,
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

/** Deletes the live token's side rows, then its row: whether it existed. */
export async function deleteToken(d1: D1Database, fence: WriteFence, id: string, now: number): Promise<boolean> {
  const { tenantId } = fence;
  const results = await fencedBatch(d1, fence, [
    ...SIDE_TABLES.map((table) => d1.prepare(`DELETE FROM ${getTableName(table)} WHERE tenant_id = ? AND token_id = ?`).bind(tenantId, id)),
    d1
      .prepare("DELETE FROM tokens WHERE tenant_id = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?) RETURNING id")
      .bind(tenantId, id, now),
  ]);
  return results.at(-1)?.results.length === 1;
}

function insertSideRows(d1: D1Database, sealed: SealedToken[], guard?: { condition: string; params: unknown[] }): D1PreparedStatement[] {
  // `sealed` (not a column) lets a guard match the side row to the token row written with it.
  const containers = sealed.flatMap(({ row }) =>
    (JSON.parse(row.containers) as string[]).map((container) => ({
      tenant_id: row.tenantId,
      container,
      token_id: row.id,
      sealed: sealedMark(row.ciphertext),
    })),
  );
  const metadata = sealed.flatMap(({ row, metadata }) =>
    metadata.map(([key, value]) => ({ tenant_id: row.tenantId, key, value, token_id: row.id, sealed: sealedMark(row.ciphertext) })),
  );
  const searchIndex = sealed.flatMap(({ row, blindIndexes }) =>
    blindIndexes.map((blindIndex) => ({
      tenant_id: row.tenantId,
      blind_index: blindIndex,
      token_id: row.id,
      sealed: sealedMark(row.ciphertext),
    })),
  );
  return [
    insertFromJson(d1, tokenContainers, containers, { guard }),
    ...(metadata.length > 0 ? [insertFromJson(d1, tokenMetadata, metadata, { guard })] : []),
    ...(searchIndex.length > 0 ? [insertFromJson(d1, tokenSearchIndex, searchIndex, { guard })] : []),
  ];
}

/**
 * `INSERT INTO table (columns) SELECT … FROM json_each(?)`: the column list comes from the drizzle
 * schema. `returning` names a column whose rows the statement answers, for counting what went in.
 */
function insertFromJson(
  d1: D1Database,
  table: Table,
  rows: Record<string, unknown>[],
  { guard, returning }: { guard?: { condition: string; params: unknown[] }; returning?: string } = {},
): D1PreparedStatement {
  const columns = Object.values(getTableColumns(table)).map((column) => column.name);
  const statement =
    `INSERT INTO ${getTableName(table)} (${columns.join(", ")}) ` +
    `SELECT ${columns.map((column) => `value ->> '${column}'`).join(", ")} FROM json_each(?)` +
    (guard ? ` WHERE ${guard.condition}` : "") +
    (returning ? ` RETURNING ${returning}` : "");
  return d1.prepare(statement).bind(JSON.stringify(rows), ...(guard?.params ?? []));
}

/** The row keyed by SQL column names, as insertFromJson reads it. */
function columnsOf(table: Table, row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(getTableColumns(table)).map(([property, column]) => [column.name, row[property] ?? null]));
}
