import { getTableColumns } from "drizzle-orm";
import type { KeysetPosition } from "../db/cursors";
import { tokens } from "../db/data-tables";
import { normalTokenId } from "../tokens/id-format";
import { SEARCHABLE_TYPES } from "../tokens/types";
import type { ContainerTerm, Query, Range, Term } from "./ast";
import { timeSpanOf } from "./dates";
import { bestDriver, driverRank, UNDRIVABLE } from "./drivers";

/*
 * AST → one parameterised SQL statement (and, for a page by number, its bounded count). Every
 * value of the query travels in a single JSON array parameter read with `->>`: D1 allows 100 bound
 * parameters per statement, fewer than a query of 100 terms and an application of 100 rules may need.
 *
 * SQLite has no statistics here and believes a tenant holds about ten tokens, so left alone it
 * walks the tenant's created_at index and tests every token against the query. When the query
 * has a selective term (a "driver": a container, metadata or data lookup in a side table, an id,
 * a fingerprint, or the application that created or modified the token) the tenant
 * condition is written `+t.tenant_id`, which keeps it off that index, and the driver is written as
 * the only indexable condition, so the search reads the driver's matches and sorts them. Every
 * other term is written as a per-token filter. A query without a driver walks the created_at
 * index newest first and stops once the page is full.
 */

export interface SearchScope {
  tenantId: string;
  now: number;
  /** Container prefixes the caller may search (rules' containers); null for every container. */
  containers: string[] | null;
  /** The blind index of each data value of the query. */
  /** Each `data:` value's blind index, or its blind indexes under every data-key version the tenant holds (during a rotation). */
  blindIndexes: ReadonlyMap<string, string | readonly string[]>;
}

/** v1's window: a page by number, and the count of matches up to a horizon. */
export interface SearchWindow {
  limit: number;
  offset: number;
  /** The count stops at this many matches. */
  countLimit: number;
}

/** v2's window: the rows after a position (the first page: none), never a count of rows to skip. */
export interface KeysetWindow {
  limit: number;
  after: KeysetPosition | null;
}

export interface Statement {
  sql: string;
  params: unknown[];
}

export interface CompiledPage {
  page: Statement;
  /** Whether a selective term drives the search (see above); exposed for the query-plan tests. */
  driven: boolean;
}

export interface CompiledSearch extends CompiledPage {
  count: Statement;
}

/**
 * `data:` matches only tokens of the types that can have search indexes. Written as literals: they
 * are constants of this code (checked below), never text from a query.
 */
const DATA_TYPES_CONDITION = `t.type IN (${SEARCHABLE_TYPES.map((type) => {
  if (!/^[a-z_]+$/.test(type)) throw new Error(`Unexpected token type ${type}`);
  return `'${type}'`;
}).join(", ")})`;

const SELECTED_COLUMNS = Object.entries(getTableColumns(tokens))
  .map(([property, column]) => `t.${column.name} AS "${property}"`)
  .join(", ");

const NEWEST_FIRST = "ORDER BY t.created_at DESC, t.id DESC";

/** A page by number and the bounded count of matches (POST /tokens/search). */
export function compileSearch(query: Query | null, scope: SearchScope, window: SearchWindow): CompiledSearch {
  const { where, params, driven } = conditionsOf(query, scope, null);
  // The window is written into the statement: a bound LIMIT costs SQLite measurably more (see
  // bench/search.mjs), and these are integers the service computed, never text from the query.
  return {
    page: {
      sql: `SELECT ${SELECTED_COLUMNS} FROM tokens AS t WHERE ${where} ${NEWEST_FIRST} LIMIT ${rowCount(window.limit)} OFFSET ${rowCount(window.offset)}`,
      params,
    },
    count: {
      sql: `SELECT count(*) AS total FROM (SELECT 1 FROM tokens AS t WHERE ${where} LIMIT ${rowCount(window.countLimit)})`,
      params,
    },
    driven,
  };
}

/**
 * The rows after a keyset position, newest first (the v2 routes): the position is one more
 * condition on (created_at, id), the order's own columns, so the search starts where the last page
 * ended instead of reading and skipping the pages before it. No count: a cursor page has none.
 */
export function compileSearchAfter(query: Query | null, scope: SearchScope, window: KeysetWindow): CompiledPage {
  const { where, params, driven } = conditionsOf(query, scope, window.after);
  return {
    page: { sql: `SELECT ${SELECTED_COLUMNS} FROM tokens AS t WHERE ${where} ${NEWEST_FIRST} LIMIT ${rowCount(window.limit)}`, params },
    driven,
  };
}

/**
 * The conditions, tenant and liveness first, then the keyset position, the caller's containers and
 * the query, with the parameters they read. The position comes before the query: of two upper
 * bounds on created_at (a date range's and the position's), SQLite walks the index from the first
 * it meets, and the position's is the one that moves down page after page.
 */
function conditionsOf(query: Query | null, scope: SearchScope, after: KeysetPosition | null) {
  const values = new QueryValues();
  const driven = query !== null && driverRank(query) !== UNDRIVABLE;
  const conditions = [driven ? "+t.tenant_id = ?1" : "t.tenant_id = ?1", "(t.expires_at IS NULL OR t.expires_at > ?2)"];
  if (after !== null) conditions.push(`(t.created_at, t.id) < (${values.ref(after.createdAt)}, ${values.ref(after.id)})`);
  if (scope.containers !== null) conditions.push(accessCondition(scope.containers, values));
  if (query !== null) conditions.push(new Compiler(values, scope).compile(query, driven));
  return { where: conditions.join(" AND "), params: paramsOf(scope, values), driven };
}

/** ?3 is bound only when the statement reads it: D1 refuses a binding the SQL does not number. */
function paramsOf(scope: SearchScope, values: QueryValues): unknown[] {
  return values.isEmpty() ? [scope.tenantId, scope.now] : [scope.tenantId, scope.now, values.json()];
}

/** A non-negative integer as SQL text; anything else is a bug in the caller. */
function rowCount(value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`Not a row count: ${value}`);
  return String(value);
}

/** The values of one statement, each once, as SQL that reads it from the JSON parameter ?3. */
class QueryValues {
  private readonly positions = new Map<string, number>();
  private readonly list: (string | number)[] = [];

  ref(value: string | number): string {
    const key = `${typeof value}:${value}`;
    let position = this.positions.get(key);
    if (position === undefined) {
      position = this.list.push(value) - 1;
      this.positions.set(key, position);
    }
    return `(?3 ->> ${position})`;
  }

  json(): string {
    return JSON.stringify(this.list);
  }

  isEmpty(): boolean {
    return this.list.length === 0;
  }
}

class Compiler {
  constructor(
    private readonly values: QueryValues,
    private readonly scope: SearchScope,
  ) {}

  /** `drive`: this node must supply the indexable condition the search starts from. */
  compile(query: Query, drive: boolean): string {
    switch (query.kind) {
      case "term":
        return drive ? this.driver(query) : this.filter(query);
      case "range":
        return this.range(query);
      case "not":
        return `NOT (${this.compile(query.operand, false)})`;
      case "or":
        return balanced(
          query.operands.map((operand) => this.compile(operand, drive)),
          "OR",
        );
      case "and": {
        const driver = drive ? bestDriver(query.operands) : undefined;
        return balanced(
          query.operands.map((operand) => this.compile(operand, operand === driver)),
          "AND",
        );
      }
    }
  }

  /** The term as an index lookup that yields the matching tokens. */
  private driver(term: Term): string {
    const v = (value: string | number) => this.values.ref(value);
    switch (term.field) {
      case "id":
        // Through the (tenant_id, id) primary key: the driven statement keeps t.tenant_id off indexes.
        return `t.rowid IN (SELECT rowid FROM tokens WHERE tenant_id = ?1 AND id = ${v(normalTokenId(term.value))})`;
      case "fingerprint":
        // A token re-sealed by a data-key rotation also answers to the fingerprint it had before.
        return (
          `t.rowid IN (SELECT rowid FROM tokens WHERE tenant_id = ?1 AND fingerprint = ${v(term.value)} ` +
          `UNION ALL SELECT rowid FROM tokens WHERE tenant_id = ?1 AND previous_fingerprint = ${v(term.value)})`
        );
      case "created_by":
      case "modified_by":
        return `t.rowid IN (SELECT rowid FROM tokens WHERE tenant_id = ?1 AND ${term.field} = ${v(term.value.toLowerCase())})`;
      // Side rows name tokens by (tenant_id, token_id), the tokens table's primary key.
      case "data":
        return `(t.tenant_id, t.id) IN (SELECT tenant_id, token_id FROM token_search_index WHERE tenant_id = ?1 AND ${this.blindIndexMatch("blind_index", term.value)}) AND ${DATA_TYPES_CONDITION}`;
      case "metadata":
        return `(t.tenant_id, t.id) IN (SELECT tenant_id, token_id FROM token_metadata WHERE tenant_id = ?1 AND key = ${v(term.key.toLowerCase())} AND value = ${v(term.value.toLowerCase())})`;
      case "container":
        return `(t.tenant_id, t.id) IN (SELECT tenant_id, token_id FROM token_containers WHERE tenant_id = ?1 AND ${this.containerMatch("container", term)})`;
      default:
        return this.filter(term);
    }
  }

  /** The term as a test of one token (`t`). */
  private filter(term: Term): string {
    const v = (value: string | number) => this.values.ref(value);
    switch (term.field) {
      case "id":
        return `t.id = ${v(normalTokenId(term.value))}`;
      case "created_by":
      case "modified_by":
        return `t.${term.field} = ${v(term.value.toLowerCase())}`;
      case "type":
        return `t.type = ${v(term.value)}`;
      case "fingerprint":
        return `(t.fingerprint = ${v(term.value)} OR t.previous_fingerprint = ${v(term.value)})`;
      case "data":
        return `EXISTS (SELECT 1 FROM token_search_index AS s WHERE s.tenant_id = ?1 AND ${this.blindIndexMatch("s.blind_index", term.value)} AND s.token_id = t.id) AND ${DATA_TYPES_CONDITION}`;
      case "metadata":
        return `EXISTS (SELECT 1 FROM token_metadata AS m WHERE m.tenant_id = ?1 AND m.key = ${v(term.key.toLowerCase())} AND m.value = ${v(term.value.toLowerCase())} AND m.token_id = t.id)`;
      case "container":
        // A subtree probe starts from the token's own containers, through (tenant_id, token_id) (see accessCondition).
        return term.subtree
          ? `EXISTS (SELECT 1 FROM token_containers AS c INDEXED BY token_containers_token WHERE c.token_id = t.id AND c.tenant_id = ?1 AND ${this.containerMatch("c.container", term)})`
          : `EXISTS (SELECT 1 FROM token_containers AS c WHERE c.tenant_id = ?1 AND ${this.containerMatch("c.container", term)} AND c.token_id = t.id)`;
      case "created_at":
      case "modified_at": {
        const span = timeSpanOf(term.value)!;
        return `t.${term.field} >= ${v(span.start)} AND t.${term.field} < ${v(span.end)}`;
      }
    }
  }

  private range(range: Range): string {
    const column = `t.${range.field}`;
    const bounds: string[] = [];
    if (range.from) {
      const span = timeSpanOf(range.from.value)!;
      bounds.push(`${column} >= ${this.values.ref(range.from.inclusive ? span.start : span.end)}`);
    }
    if (range.to) {
      const span = timeSpanOf(range.to.value)!;
      bounds.push(`${column} < ${this.values.ref(range.to.inclusive ? span.end : span.start)}`);
    }
    return bounds.length > 0 ? bounds.join(" AND ") : `${column} IS NOT NULL`;
  }

  private containerMatch(column: string, term: ContainerTerm): string {
    const path = term.value.toLowerCase();
    return term.subtree ? prefixMatch(column, path, this.values) : `${column} = ${this.values.ref(path)}`;
  }

  /** `column` equals the value's blind index, or one of them while the tenant holds two key versions. */
  private blindIndexMatch(column: string, value: string): string {
    const computed = this.scope.blindIndexes.get(value);
    if (computed === undefined) throw new Error(`No blind index was computed for a data value of the query`);
    const all = typeof computed === "string" ? [computed] : computed;
    if (all.length === 1) return `${column} = ${this.values.ref(all[0]!)}`;
    return `${column} IN (${all.map((blindIndex) => this.values.ref(blindIndex)).join(", ")})`;
  }
}

/**
 * The caller's containers: a token is visible when one of its containers lies under one of them.
 * The probe starts from the token's own containers, through (tenant_id, token_id). INDEXED BY,
 * because SQLite otherwise prefers the covering primary key's tenant_id prefix, which walks all of
 * the tenant's containers for every token (test/search/query-plan.test.ts).
 */
function accessCondition(prefixes: string[], values: QueryValues): string {
  if (prefixes.length === 0) return "FALSE";
  const matches = balanced(
    prefixes.map((prefix) => prefixMatch("a.container", prefix, values)),
    "OR",
  );
  return `EXISTS (SELECT 1 FROM token_containers AS a INDEXED BY token_containers_token WHERE a.token_id = t.id AND a.tenant_id = ?1 AND (${matches}))`;
}

/**
 * Paths under `prefix` (which ends in `/`), as an index range: from the prefix up to the prefix
 * with its final `/` replaced by the next character, `0`.
 */
function prefixMatch(column: string, prefix: string, values: QueryValues): string {
  const upper = `${prefix.slice(0, -1)}0`;
  return `${column} >= ${values.ref(prefix)} AND ${column} < ${values.ref(upper)}`;
}

/**
 * Joins the conditions as a balanced tree of parentheses: SQLite parses `a OR b OR c …` as a
 * left-deep tree, and D1 refuses expressions deeper than 100.
 */
function balanced(conditions: string[], operator: "AND" | "OR"): string {
  if (conditions.length === 1) return `(${conditions[0]})`;
  const middle = Math.ceil(conditions.length / 2);
  return `(${balanced(conditions.slice(0, middle), operator)} ${operator} ${balanced(conditions.slice(middle), operator)})`;
}
