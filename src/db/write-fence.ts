/**
 * The write fence: how a data database itself refuses a tenant's writes once a move has fenced the
 * tenant there (src/tenants/moves.ts). A write checks the cached placement and commits later, with
 * no bound on the time between (docs/decisions.md, "The write fence"); so every batch that writes a
 * tenant's data carries one statement that fails the whole batch when the tenant is in
 * `write_fences`, or when the write began more than WRITE_MAX_AGE_MS before it reached the
 * database by the database's own clock. A write that commits before the fence is raised is then
 * seen by the move's last copy, which takes the changes stamped since the copy began less that age.
 */
import { TenantMovingError, WriteTooLateError } from "../errors";

/** What a write's batch checks: whose data it writes, the time its rows are stamped with, and what a refusal tells the caller. */
export interface WriteFence {
  tenantId: string;
  writtenAt: number;
  retryAfterSeconds: number;
}

/**
 * How long after it began (the time its rows are stamped with) a write may reach the database. Far
 * above a write's own time, which is a few round trips; what a move's last copy takes again.
 */
export const WRITE_MAX_AGE_MS = 60_000;

/** The database's clock, in milliseconds since the epoch. */
const DATABASE_NOW = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/**
 * Inserts nothing, or a row NOT NULL refuses, which fails the batch (as the idempotency commit mark
 * does): a NULL tenant_id for a write too late, a NULL fenced_at for a fenced tenant. One primary-key
 * lookup in a table of the tenants that moves fenced here.
 */
function fenceStatement(d1: D1Database, { tenantId, writtenAt }: WriteFence): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO write_fences (tenant_id, fenced_at)
       SELECT CASE WHEN ?2 < ${DATABASE_NOW} - ?3 THEN NULL ELSE ?1 END, NULL
       WHERE ?2 < ${DATABASE_NOW} - ?3 OR EXISTS (SELECT 1 FROM write_fences WHERE tenant_id = ?1)`,
    )
    .bind(tenantId, writtenAt, WRITE_MAX_AGE_MS);
}

/**
 * Runs the statements as one batch behind the fence: their results, or a TenantMovingError (503)
 * when the tenant is fenced, or a WriteTooLateError (503) when the write began too long ago; either
 * way nothing was written. Without a fence (the control database's own rows, which no move fences),
 * a plain batch.
 */
export async function fencedBatch(d1: D1Database, fence: WriteFence | null, statements: D1PreparedStatement[]): Promise<D1Result[]> {
  if (fence === null) return d1.batch(statements);
  try {
    return (await d1.batch([fenceStatement(d1, fence), ...statements])).slice(1);
  } catch (error) {
    const refused = error instanceof Error && /NOT NULL constraint failed: write_fences\.(\w+)/.exec(error.message)?.[1];
    if (refused === "fenced_at") throw new TenantMovingError(fence.tenantId, fence.retryAfterSeconds);
    if (refused === "tenant_id") throw new WriteTooLateError(WRITE_MAX_AGE_MS);
    throw error;
  }
}

/** Fences the tenant in the database: from now on every fenced batch of its data fails there. */
export async function raiseFence(d1: D1Database, tenantId: string, now: number): Promise<void> {
  await d1.prepare("INSERT OR IGNORE INTO write_fences (tenant_id, fenced_at) VALUES (?, ?)").bind(tenantId, now).run();
}

/** Lets the tenant's writes into the database again (a move bringing it back). */
export async function lowerFence(d1: D1Database, tenantId: string): Promise<void> {
  await d1.prepare("DELETE FROM write_fences WHERE tenant_id = ?").bind(tenantId).run();
}
