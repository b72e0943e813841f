import type { BatchItem } from "drizzle-orm/batch";
import type { ControlCommitMark, TenantContext } from "../context";
import type { Database } from "../db/client";

/** The query of an idempotency claim's commit mark, for the control batch of the write it answers (ControlCommitMark). */
export type MarkQuery = Awaited<ReturnType<ControlCommitMark["queryFor"]>>;

/** The mark's query in a batch: nothing when the request has no claim. */
export const marked = (db: Database, mark: MarkQuery | null): BatchItem<"sqlite">[] => (mark === null ? [] : [mark(db)]);

/** The mark's query as a statement of the control database's D1 binding, for a batch of prepared statements. */
export function markedStatements(db: Database, mark: MarkQuery | null): D1PreparedStatement[] {
  if (mark === null) return [];
  const { sql, params } = mark(db).toSQL();
  return [db.$client.prepare(sql).bind(...params)];
}

/**
 * Runs a route's one control write with the commit mark of the request's idempotency claim (when it
 * has one, from the `idempotentControlWrite` middleware), recording `outcome`: what the route's
 * `answerCommitted` answers a retry from. A batch that failed on the mark (another attempt of the
 * request committed first) is the mark's refusal.
 */
export async function withControlMark<T>(
  context: TenantContext,
  outcome: unknown,
  write: (mark: MarkQuery | null) => Promise<T>,
): Promise<T> {
  const mark = context.takeControlCommitMark();
  const query = mark && (await mark.queryFor(outcome));
  try {
    return await write(query);
  } catch (error) {
    throw mark?.refusalOf(error) ?? error;
  }
}
