import { and, count, desc, eq, inArray, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";
import { nameMatches } from "./filters";

/**
 * One page of a table's rows and the number of rows matching, in one D1 round trip (a batch reads
 * both from the same snapshot, so the total and the page agree).
 */
export async function selectPage<Table extends SQLiteTable>(
  db: Database,
  table: Table,
  where: SQL | undefined,
  order: (SQL | SQLiteColumn)[],
  page: { page: number; size: number },
): Promise<{ rows: Table["$inferSelect"][]; total: number }> {
  const [rows, totals] = await db.batch([
    db
      .select()
      .from(table as SQLiteTable)
      .where(where)
      .orderBy(...order)
      .limit(page.size)
      .offset((page.page - 1) * page.size),
    db
      .select({ total: count() })
      .from(table as SQLiteTable)
      .where(where),
  ]);
  return { rows: rows as Table["$inferSelect"][], total: totals[0]?.total ?? 0 };
}

/** A tenant's resource table that lists by id and name, newest first (applications, proxies, reactors). */
type NamedResourceTable = SQLiteTable & { tenantId: SQLiteColumn; id: SQLiteColumn; name: SQLiteColumn; createdAt: SQLiteColumn };

/** A page of the tenant's rows, optionally among some ids, optionally by name (`*` wildcard), newest first. */
export function namedResourcesPage<Table extends NamedResourceTable>(
  db: Database,
  table: Table,
  tenantId: string,
  filter: { id: string[]; name?: string; page: number; size: number },
) {
  const where = and(
    eq(table.tenantId, tenantId),
    filter.id.length > 0 ? inArray(table.id, filter.id) : undefined,
    filter.name ? nameMatches(table.name, filter.name) : undefined,
  );
  return selectPage(db, table, where, [desc(table.createdAt), desc(table.id)], filter);
}
