import { and, eq, gt } from "drizzle-orm";
import type { Database } from "../db/client";
import { tokenIntents } from "../db/data-tables";
import { fencedBatch, type WriteFence } from "../db/write-fence";

/* Token intents in the tenant's data database: every query is scoped by tenant first, and sees only live intents. */

export type TokenIntentRow = typeof tokenIntents.$inferSelect;

/** Inserts the intent behind the tenant's write fence, with the statements `also` (an idempotency claim's commit mark) in the same batch. */
export async function insertIntent(d1: D1Database, fence: WriteFence, row: TokenIntentRow, also: D1PreparedStatement[]): Promise<void> {
  await fencedBatch(d1, fence, [
    d1
      .prepare(
        `INSERT INTO token_intents (tenant_id, id, type, ciphertext, created_by, created_at, expires_at, cvc_expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(row.tenantId, row.id, row.type, row.ciphertext, row.createdBy, row.createdAt, row.expiresAt, row.cvcExpiresAt),
    ...also,
  ]);
}

export async function findLiveIntent(db: Database, tenantId: string, id: string, now: number): Promise<TokenIntentRow | undefined> {
  const [row] = await db
    .select()
    .from(tokenIntents)
    .where(and(eq(tokenIntents.tenantId, tenantId), eq(tokenIntents.id, id), gt(tokenIntents.expiresAt, now)))
    .limit(1);
  return row;
}

/** The live intents of the tenant among the ids, in one statement (detokenization reads every intent of a request at once). */
export async function liveIntents(d1: D1Database, tenantId: string, ids: string[], now: number): Promise<TokenIntentRow[]> {
  if (ids.length === 0) return [];
  const { results } = await d1
    .prepare(
      `SELECT tenant_id AS tenantId, id, type, ciphertext, created_by AS createdBy, created_at AS createdAt,
         expires_at AS expiresAt, cvc_expires_at AS cvcExpiresAt
       FROM token_intents WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?)) AND expires_at > ?`,
    )
    .bind(tenantId, JSON.stringify(ids), now)
    .all<TokenIntentRow>();
  return results;
}

/** Deletes the live intent behind the tenant's write fence: whether it existed. */
export async function deleteIntent(d1: D1Database, fence: WriteFence, id: string, now: number): Promise<boolean> {
  const [deleted] = await fencedBatch(d1, fence, [
    d1.prepare("DELETE FROM token_intents WHERE tenant_id = ? AND id = ? AND expires_at > ?").bind(fence.tenantId, id, now),
  ]);
  return deleted!.meta.changes === 1;
}

/**
 * The statements that consume the live intent in a conversion's batch: delete it, then fail the whole
 * batch when nothing was deleted (it expired, was deleted, or another conversion took it), so the token
 * is written exactly when the intent goes. The second statement inserts a row of NULLs only when the
 * delete changed nothing, which NOT NULL refuses: SQLite has no other way for a statement outside a
 * trigger to abort a batch (the idempotency commit mark does the same).
 */
export function consumeStatements(d1: D1Database, tenantId: string, id: string, now: number): D1PreparedStatement[] {
  return [
    d1.prepare("DELETE FROM token_intents WHERE tenant_id = ? AND id = ? AND expires_at > ?").bind(tenantId, id, now),
    d1.prepare(
      `INSERT INTO token_intents (tenant_id, id, type, ciphertext, created_by, created_at, expires_at)
       SELECT NULL, NULL, NULL, NULL, NULL, 0, 0 WHERE changes() = 0`,
    ),
  ];
}

/** The failure of a batch whose consumeStatements found no live intent. */
export function isIntentGoneError(error: unknown): boolean {
  return error instanceof Error && /NOT NULL constraint failed: token_intents\./.test(error.message);
}

/**
 * Deletes up to `limit` intents whose expiry has passed, oldest first, in one statement; the deleted.
 * Expired intents are already unknown to every read.
 */
export async function purgeExpiredIntents(d1: D1Database, now: number, limit: number): Promise<{ tenantId: string; id: string }[]> {
  const { results } = await d1
    .prepare(
      `DELETE FROM token_intents WHERE (tenant_id, id) IN (
         SELECT tenant_id, id FROM token_intents WHERE expires_at <= ? ORDER BY expires_at LIMIT ?
       ) RETURNING tenant_id AS tenantId, id`,
    )
    .bind(now, limit)
    .all<{ tenantId: string; id: string }>();
  return results;
}
