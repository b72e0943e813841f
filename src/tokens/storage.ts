import { type AnyColumn, and, asc, count, desc, eq, gt, isNull, lt, ne, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { tokens } from "../db/data-tables";
import { selectPage } from "../db/pages";

/*
 * The read side of tokens: a token, a page of them, duplicates by fingerprint, what detokenization
 * needs, and what a key rotation still has to re-seal. Writes are storage-writes.ts; the cron's
 * purges storage-purges.ts. Every query is scoped by tenant first.
 */

export type TokenRow = typeof tokens.$inferSelect;

export type UsableToken = Pick<TokenRow, "id" | "ciphertext" | "mask" | "containers" | "cvcExpiresAt">;

// Detokenization runs on every proxied call that holds references: the columns it reads, in one
// statement prepared once per D1 session (so per request: a session carries the request's
// bookmark), with a primary key lookup for a single id.
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

/** The live tokens of the tenant among the ids. */
export function liveTokens(db: Database, tenantId: string, ids: string[], now: number): Promise<TokenRow[]> {
  return db
    .select()
    .from(tokens)
    .where(and(eq(tokens.tenantId, tenantId), inJsonArray(tokens.id, ids), tokenIsLive(now)));
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
