import { count, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";

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
    db.select({ total: count() }).from(table as SQLiteTable).where(where),
  ]);
  return { rows: rows as Table["$inferSelect"][], total: totals[0]?.total ?? 0 };
}
