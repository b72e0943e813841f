import { and, count, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";
import type { KeysetPosition } from "./cursors";
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

/** The tenant's rows, optionally among some ids, optionally by name (`*` wildcard). */
function namedResources(table: NamedResourceTable, tenantId: string, filter: { id: string[]; name?: string }): SQL | undefined {
  return and(
    eq(table.tenantId, tenantId),
    filter.id.length > 0 ? inArray(table.id, filter.id) : undefined,
    filter.name ? nameMatches(table.name, filter.name) : undefined,
  );
}

/** A page of the tenant's rows, optionally among some ids, optionally by name (`*` wildcard), newest first. */
export function namedResourcesPage<Table extends NamedResourceTable>(
  db: Database,
  table: Table,
  tenantId: string,
  filter: { id: string[]; name?: string; page: number; size: number },
) {
  return selectPage(db, table, namedResources(table, tenantId, filter), [desc(table.createdAt), desc(table.id)], filter);
}

/** Up to `limit` of those rows after a keyset position, newest first: a cursor page, which skips no rows by count. */
export async function namedResourcesAfter<Table extends NamedResourceTable>(
  db: Database,
  table: Table,
  tenantId: string,
  filter: { id: string[]; name?: string },
  after: KeysetPosition | null,
  limit: number,
): Promise<Table["$inferSelect"][]> {
  const rows = await db
    .select()
    .from(table as SQLiteTable)
    .where(
      and(
        namedResources(table, tenantId, filter),
        after === null ? undefined : sql`(${table.createdAt}, ${table.id}) < (${after.createdAt}, ${after.id})`,
      ),
    )
    .orderBy(desc(table.createdAt), desc(table.id))
    .limit(limit);
  return rows as Table["$inferSelect"][];
}
