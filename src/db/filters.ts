import { type AnyColumn, type SQL, sql } from "drizzle-orm";

/**
 * A `name` filter: `*` is the only wildcard, everything else matches literally and
 * case-insensitively (SQLite LIKE folds ASCII case).
 */
export function nameMatches(column: AnyColumn, filter: string): SQL {
  const pattern = filter.replace(/[\\%_]/g, (char) => `\\${char}`).replace(/\*/g, "%");
  return sql`${column} LIKE ${pattern} ESCAPE '\\'`;
}
