import { and, asc, eq, lt } from "drizzle-orm";
import type { Database } from "../db/client";
import { reactorRequests } from "../db/data-tables";
import { fencedBatch, type WriteFence } from "../db/write-fence";

/** An async reaction as the data database holds it (src/db/data-tables.ts, reactor_requests). */
export type ReactionRow = typeof reactorRequests.$inferSelect;

const reaction = (tenantId: string, id: string) => and(eq(reactorRequests.tenantId, tenantId), eq(reactorRequests.id, id));

/**
 * Inserts a pending reaction unless the tenant already has `maxOpen` waiting or running, in one
 * statement (so concurrent requests cannot all slip under the bound), in one batch with the
 * idempotency claim's commit mark when there is one, behind the write fence (a move copies the
 * tenant's reactions last, once the fence is up). Whether it was inserted.
 */
export async function insertReaction(
  d1: D1Database,
  fence: WriteFence,
  row: ReactionRow,
  maxOpen: number,
  commitMarks: D1PreparedStatement[],
): Promise<boolean> {
  const insert = d1
    .prepare(
      `INSERT INTO reactor_requests (tenant_id, id, reactor_id, application_id, status, args, detokenized, created_at, expires_at)
       SELECT ?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8
       WHERE (SELECT count(*) FROM reactor_requests WHERE tenant_id = ?1 AND status IN ('pending', 'running')) < ?9`,
    )
    .bind(row.tenantId, row.id, row.reactorId, row.applicationId, row.args, row.detokenized, row.createdAt, row.expiresAt, maxOpen);
  const [inserted] = await fencedBatch(d1, fence, [insert, ...commitMarks]);
  return inserted!.meta.changes === 1;
}

/** The reaction of the tenant's reactor, whatever its state. */
export async function findReaction(db: Database, tenantId: string, reactorId: string, id: string): Promise<ReactionRow | undefined> {
  const [row] = await db
    .select()
    .from(reactorRequests)
    .where(and(reaction(tenantId, id), eq(reactorRequests.reactorId, reactorId)))
    .limit(1);
  return row;
}

/** Whether the tenant holds the reaction (an answer made again from an idempotency claim's commit mark). */
export async function reactionExists(db: Database, tenantId: string, id: string): Promise<boolean> {
  const [row] = await db.select({ id: reactorRequests.id }).from(reactorRequests).where(reaction(tenantId, id)).limit(1);
  return row !== undefined;
}

/** Claims a pending reaction for the run that starts at `now`: of every delivery of its message, one gets it. */
export async function claimReaction(db: Database, tenantId: string, id: string, now: number): Promise<ReactionRow | undefined> {
  const [row] = await db
    .update(reactorRequests)
    .set({ status: "running", startedAt: now })
    .where(and(reaction(tenantId, id), eq(reactorRequests.status, "pending")))
    .returning();
  return row;
}

/**
 * Keeps the outcome of the run that claimed the reaction at `startedAt`, and forgets its args; false
 * when that claim no longer holds it (the cron failed it meanwhile).
 */
export async function finishReaction(
  db: Database,
  tenantId: string,
  id: string,
  startedAt: number,
  outcome: Pick<ReactionRow, "status" | "result" | "completedAt"> & Partial<Pick<ReactionRow, "expiresAt">>,
): Promise<boolean> {
  const finished = await db
    .update(reactorRequests)
    .set({ ...outcome, args: null })
    .where(and(reaction(tenantId, id), eq(reactorRequests.status, "running"), eq(reactorRequests.startedAt, startedAt)))
    .returning({ id: reactorRequests.id });
  return finished.length > 0;
}

/** Pending reactions created before `before`, oldest first, at most `limit`: their message may have been lost. */
export function waitingSince(db: Database, before: number, limit: number): Promise<Pick<ReactionRow, "tenantId" | "id">[]> {
  return db
    .select({ tenantId: reactorRequests.tenantId, id: reactorRequests.id })
    .from(reactorRequests)
    .where(and(eq(reactorRequests.status, "pending"), lt(reactorRequests.createdAt, before)))
    .orderBy(asc(reactorRequests.createdAt))
    .limit(limit);
}

/** Running reactions claimed before `before`, at most `limit`: their run stopped without an outcome. */
export function runningSince(
  db: Database,
  before: number,
  limit: number,
): Promise<Pick<ReactionRow, "tenantId" | "id" | "reactorId" | "startedAt">[]> {
  return db
    .select({
      tenantId: reactorRequests.tenantId,
      id: reactorRequests.id,
      reactorId: reactorRequests.reactorId,
      startedAt: reactorRequests.startedAt,
    })
    .from(reactorRequests)
    .where(and(eq(reactorRequests.status, "running"), lt(reactorRequests.startedAt, before)))
    .limit(limit);
}

/** Deletes up to `limit` reactions whose retention ended by `now`; how many. */
export async function purgeExpiredReactions(d1: D1Database, now: number, limit: number): Promise<number> {
  const { meta } = await d1
    .prepare(
      "DELETE FROM reactor_requests WHERE rowid IN (SELECT rowid FROM reactor_requests INDEXED BY reactor_requests_expires WHERE expires_at <= ? LIMIT ?)",
    )
    .bind(now, limit)
    .run();
  return meta.changes;
}
