import { type AnyColumn, type SQL, sql } from "drizzle-orm";

/**
 * A `name` filter: `*` is the only wildcard, everything else matches literally and
 * case-insensitively (SQLite LIKE folds ASCII case).
 */
export function nameMatches(column: AnyColumn, filter: string): SQL {
  const pattern = filter.replace(/[\\%_]/g, (char) => `\\${char}`).replace(/\*/g, "%");
  return sql`${column} LIKE ${pattern} ESCAPE '\\'`;
}

/**
 * `column IN (values)` with the values bound as one JSON array: D1 allows 100 bound parameters per
 * statement, and a detokenization may name as many ids as that.
 */
export function isOneOf(column: AnyColumn, values: string[]): SQL {
  return sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;
}
