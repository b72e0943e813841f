import {
  type AnyColumn,
  and,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  getTableName,
  gt,
  isNull,
  lt,
  ne,
  or,
  type SQL,
  sql,
  type Table,
} from "drizzle-orm";
import type { Database } from "../db/client";
import { tokenContainers, tokenMetadata, tokenSearchIndex, tokens } from "../db/data-tables";
import { selectPage } from "../db/pages";

/*
 * The write side of tokens, as prepared D1 statements for one batch (one transaction). Rows travel
 * as one JSON parameter per table and are unpacked by json_each, so a tokenize of 100 tokens is
 * four statements, and D1's limit of 100 bound parameters per statement never applies.
 */

export type TokenRow = typeof tokens.$inferSelect;

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

const SIDE_TABLES = [tokenContainers, tokenMetadata, tokenSearchIndex] as const;
/** The tables that hold a token's index rows, by name (for copies between databases). */
export const TOKEN_SIDE_TABLE_NAMES = SIDE_TABLES.map((table) => getTableName(table));
const PURGE_CHUNK = 500;

/**
 * Inserts the tokens. `chosenIds` (ids the client chose) may still be held by expired tokens that
 * the cron has not purged yet: those go first, since an expired token behaves as deleted.
 *
 * A deduplicating token (`unlessDuplicateIn`) is inserted by the same statement only when no
 * duplicate is live, and its side rows only when its row was inserted: D1 runs statements one at a
 * time, so of concurrent deduplicating creates of one value exactly one inserts. The check reads
 * only the tokens rows (their containers column), never the side rows a concurrent batch writes in
 * a later statement. Answers how many token rows went in.
 */
export async function insertTokens(d1: D1Database, sealed: SealedToken[], chosenIds: string[], now: number): Promise<number> {
  const results = await d1.batch(insertStatements(d1, sealed, chosenIds, now));
  return results[tokensStatement(chosenIds)]?.meta.changes ?? 0;
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
      );
  return [...release, insert, ...insertSideRows(d1, sealed, guarded ? INSERTED_WITH_IT : undefined)];
}

/** Where the tokens statement sits in insertStatements' batch. */
function tokensStatement(chosenIds: string[]): number {
  return chosenIds.length === 0 ? 0 : SIDE_TABLES.length + 1;
}

/** A side row goes in only with the token row it belongs to (matched on its fresh ciphertext). */
const INSERTED_WITH_IT = {
  condition:
    "EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = value ->> 'tenant_id' AND t.id = value ->> 'token_id' AND t.ciphertext = value ->> 'sealed')",
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
           WHERE substr(c.value, 1, length(p.value)) = p.value)))`;
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

export type UsableToken = Pick<TokenRow, "id" | "ciphertext" | "mask" | "containers" | "cvcExpiresAt">;

// Detokenization runs on every proxied call that holds references: the columns it reads, in one
// statement prepared once per isolate's D1 binding, with a primary key lookup for a single id.
const USABLE_COLUMNS = "id, ciphertext, mask, containers, cvc_expires_at AS cvcExpiresAt";
const LIVE = "(expires_at IS NULL OR expires_at > ?3)";
const usableStatements = new WeakMap<D1Database, { one: D1PreparedStatement; many: D1PreparedStatement }>();

/** The live tokens of the tenant among the ids, with what detokenization needs of them. */
export async function usableTokens(d1: D1Database, tenantId: string, ids: string[], now: number): Promise<UsableToken[]> {
  if (ids.length === 0) return [];
  let statements = usableStatements.get(d1);
  if (!statements) {
    statements = {
      one: d1.prepare(`SELECT ${USABLE_COLUMNS} FROM tokens WHERE tenant_id = ?1 AND id = ?2 AND ${LIVE}`),
      many: d1.prepare(`SELECT ${USABLE_COLUMNS} FROM tokens WHERE tenant_id = ?1 AND id IN (SELECT value FROM json_each(?2)) AND ${LIVE}`),
    };
    usableStatements.set(d1, statements);
  }
  const statement =
    ids.length === 1 ? statements.one.bind(tenantId, ids[0], now) : statements.many.bind(tenantId, JSON.stringify(ids), now);
  return (await statement.all<UsableToken>()).results;
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
export async function replaceToken(d1: D1Database, token: SealedToken, readCiphertext: string): Promise<boolean> {
  return (await replaceTokens(d1, [{ token, readCiphertext }])) === 1;
}

/** Replaces several tokens as replaceToken does, in one batch: how many were replaced. */
export async function replaceTokens(d1: D1Database, replacements: { token: SealedToken; readCiphertext: string }[]): Promise<number> {
  if (replacements.length === 0) return 0;
  const batches = replacements.map(({ token, readCiphertext }) => replaceStatements(d1, token, readCiphertext));
  const results = await d1.batch(batches.flat());
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
export async function deleteToken(d1: D1Database, tenantId: string, id: string, now: number): Promise<boolean> {
  const results = await d1.batch([
    ...SIDE_TABLES.map((table) => d1.prepare(`DELETE FROM ${getTableName(table)} WHERE tenant_id = ? AND token_id = ?`).bind(tenantId, id)),
    d1.prepare("DELETE FROM tokens WHERE tenant_id = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)").bind(tenantId, id, now),
  ]);
  return results.at(-1)?.meta.changes === 1;
}

/**
 * Removes tokens whose expiry has passed, with their side rows, in batches of a bounded size so
 * no single transaction grows without limit. Expired tokens are already invisible to every read.
 */
export async function purgeExpiredTokens(d1: D1Database, now: number): Promise<{ tenantId: string; id: string }[]> {
  // Ids are unique per tenant only, so rows are matched on the pair.
  const expired = "SELECT tenant_id, id FROM tokens WHERE expires_at <= ? ORDER BY expires_at, tenant_id, id LIMIT ?";
  const purged: { tenantId: string; id: string }[] = [];
  for (;;) {
    const results = await d1.batch([
      ...SIDE_TABLES.map((table) =>
        d1.prepare(`DELETE FROM ${getTableName(table)} WHERE (tenant_id, token_id) IN (${expired})`).bind(now, PURGE_CHUNK),
      ),
      d1.prepare(`DELETE FROM tokens WHERE (tenant_id, id) IN (${expired}) RETURNING tenant_id AS tenantId, id`).bind(now, PURGE_CHUNK),
    ]);
    const deleted = (results.at(-1)?.results ?? []) as { tenantId: string; id: string }[];
    purged.push(...deleted);
    if (deleted.length < PURGE_CHUNK) return purged;
  }
}

/** Cards whose cvc must be gone by `now`, oldest deadline first. */
export async function tokensWithCvcDue(
  d1: D1Database,
  now: number,
  limit: number,
): Promise<Pick<TokenRow, "tenantId" | "id" | "ciphertext">[]> {
  const { results } = await d1
    .prepare(
      "SELECT tenant_id AS tenantId, id, ciphertext FROM tokens WHERE cvc_expires_at <= ? ORDER BY cvc_expires_at, tenant_id, id LIMIT ?",
    )
    .bind(now, limit)
    .all<Pick<TokenRow, "tenantId" | "id" | "ciphertext">>();
  return results;
}

/** Writes the card's data without its cvc, unless the token changed since it was read; 1 or 0. */
export async function replaceCiphertextWithoutCvc(
  d1: D1Database,
  read: Pick<TokenRow, "tenantId" | "id" | "ciphertext">,
  ciphertext: string,
): Promise<number> {
  const result = await d1
    .prepare("UPDATE tokens SET ciphertext = ?, cvc_expires_at = NULL WHERE tenant_id = ? AND id = ? AND ciphertext = ?")
    .bind(ciphertext, read.tenantId, read.id, read.ciphertext)
    .run();
  return result.meta.changes;
}

/**
 * Clears the cvc deadlines of a tenant whose keys were destroyed (crypto-shredded): its cvcs can no
 * longer be read by anyone, and its rows must not stand in the way of other tenants' purge.
 */
export async function forgetCvcDeadlines(d1: D1Database, tenantId: string): Promise<void> {
  await d1.prepare("UPDATE tokens SET cvc_expires_at = NULL WHERE tenant_id = ? AND cvc_expires_at IS NOT NULL").bind(tenantId).run();
}

function insertSideRows(d1: D1Database, sealed: SealedToken[], guard?: { condition: string; params: unknown[] }): D1PreparedStatement[] {
  // `sealed` (not a column) lets a guard match the side row to the token row written with it.
  const containers = sealed.flatMap(({ row }) =>
    (JSON.parse(row.containers) as string[]).map((container) => ({
      tenant_id: row.tenantId,
      container,
      token_id: row.id,
      sealed: row.ciphertext,
    })),
  );
  const metadata = sealed.flatMap(({ row, metadata }) =>
    metadata.map(([key, value]) => ({ tenant_id: row.tenantId, key, value, token_id: row.id, sealed: row.ciphertext })),
  );
  const searchIndex = sealed.flatMap(({ row, blindIndexes }) =>
    blindIndexes.map((blindIndex) => ({ tenant_id: row.tenantId, blind_index: blindIndex, token_id: row.id, sealed: row.ciphertext })),
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
  return Object.fromEntries(Object.entries(getTableColumns(table)).map(([property, column]) => [column.name, row[property] ?? null]));
}

// Reads through drizzle.

/** The condition every read of tokens carries: an expired token behaves as deleted. */
function tokenIsLive(now: number): SQL {
  return or(isNull(tokens.expiresAt), gt(tokens.expiresAt, now))!;
}

/** `column IN (…)` with the values as one JSON parameter, whatever their number. */
function inJsonArray(column: AnyColumn, values: string[]): SQL {
  return sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;
}

export async function findLiveToken(db: Database, tenantId: string, id: string, now: number): Promise<TokenRow | undefined> {
  const [row] = await db
    .select()
    .from(tokens)
    .where(and(eq(tokens.tenantId, tenantId), eq(tokens.id, id), tokenIsLive(now)))
    .limit(1);
  return row;
}

export interface TokenListFilter {
  ids: string[];
  types: string[];
  /** Lower-cased (key, value) pairs that must all be among the token's metadata. */
  metadata: [string, string][];
  /** One of the token's containers must lie under one of these; null: any container. */
  containerPrefixes: string[] | null;
  page: number;
  size: number;
}

/** A page of the tenant's live tokens matching the filter, newest first, with the number matching. */
export function liveTokensPage(db: Database, tenantId: string, filter: TokenListFilter, now: number) {
  const conditions = [
    eq(tokens.tenantId, tenantId),
    tokenIsLive(now),
    filter.ids.length > 0 ? inJsonArray(tokens.id, filter.ids) : undefined,
    filter.types.length > 0 ? inJsonArray(tokens.type, filter.types) : undefined,
    filter.metadata.length > 0 ? holdsMetadata(filter.metadata) : undefined,
    filter.containerPrefixes === null ? undefined : inContainers(filter.containerPrefixes),
  ];
  return selectPage(db, tokens, and(...conditions), [desc(tokens.createdAt), desc(tokens.id)], filter);
}

/**
 * Every (key, value) pair is among the token's (lower-cased) metadata; the pairs travel as one JSON
 * parameter. INDEXED BY, as in inContainers: the primary key's tenant_id prefix would walk all of the
 * tenant's metadata per token.
 */
function holdsMetadata(pairs: [string, string][]): SQL {
  return sql`(SELECT count(DISTINCT m.key) FROM token_metadata AS m INDEXED BY token_metadata_token, json_each(${JSON.stringify(pairs)}) AS f
    WHERE m.tenant_id = ${tokens.tenantId} AND m.key = f.value ->> 0 AND m.value = f.value ->> 1 AND m.token_id = ${tokens.id}) = ${pairs.length}`;
}

/**
 * One of the token's containers lies under one of the prefixes (a rule's container covers its
 * sub-containers). INDEXED BY: SQLite otherwise walks all of the tenant's containers per token
 * through the covering primary key (see src/search/compile.ts, accessCondition).
 */
function inContainers(prefixes: string[]): SQL {
  return sql`EXISTS (SELECT 1 FROM token_containers AS a INDEXED BY token_containers_token, json_each(${JSON.stringify(prefixes)}) AS p
    WHERE a.tenant_id = ${tokens.tenantId} AND a.token_id = ${tokens.id} AND substr(a.container, 1, length(p.value)) = p.value)`;
}

/** The tenant's live tokens with one of the fingerprints, other than `excludedId`, oldest first. */
export function liveTokensByFingerprint(
  db: Database,
  tenantId: string,
  fingerprints: string[],
  now: number,
  excludedId?: string,
): Promise<TokenRow[]> {
  return db
    .select()
    .from(tokens)
    .where(
      and(
        eq(tokens.tenantId, tenantId),
        inJsonArray(tokens.fingerprint, fingerprints),
        excludedId === undefined ? undefined : ne(tokens.id, excludedId),
        tokenIsLive(now),
      ),
    )
    .orderBy(asc(tokens.createdAt), asc(tokens.id));
}

/** Tokens of the tenant (live or expired) sealed under a data-key version older than `version`. */
export function tokensSealedBefore(db: Database, tenantId: string, version: number, limit: number): Promise<TokenRow[]> {
  return db
    .select()
    .from(tokens)
    .where(and(eq(tokens.tenantId, tenantId), lt(tokens.keyVersion, version)))
    .limit(limit);
}

/** How many tokens of the tenant are sealed under a data-key version older than `version`. */
export async function countTokensSealedBefore(db: Database, tenantId: string, version: number): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(tokens)
    .where(and(eq(tokens.tenantId, tenantId), lt(tokens.keyVersion, version)));
  return row?.n ?? 0;
}
