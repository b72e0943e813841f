import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";

/**
 * The query of an idempotency claim's commit mark, for the control batch of the write it answers
 * (ControlCommitMark in src/context.ts): a query the batch runs, or its SQL for a batch of prepared
 * statements.
 */
export type MarkQuery = (db: Database) => BatchItem<"sqlite"> & { toSQL(): { sql: string; params: unknown[] } };

/** The mark's query in a batch: nothing when the request has no claim. */
export const marked = (db: Database, mark: MarkQuery | null): BatchItem<"sqlite">[] => (mark === null ? [] : [mark(db)]);

/** The mark's query as a statement of the control database's D1 binding, for a batch of prepared statements. */
export function markedStatements(db: Database, mark: MarkQuery | null): D1PreparedStatement[] {
  if (mark === null) return [];
  const { sql, params } = mark(db).toSQL();
  return [db.$client.prepare(sql).bind(...params)];
}
