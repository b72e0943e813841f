import { and, count, eq, gt, isNull, lte } from "drizzle-orm";
import type { ApiKeyRow, ApplicationRow } from "../applications/storage";
import type { Database } from "../db/client";
import { sessions } from "../db/control-tables";

export type SessionRow = typeof sessions.$inferSelect;

export async function insertSession(db: Database, row: SessionRow): Promise<void> {
  await db.insert(sessions).values(row);
}

/**
 * How many of the application's sessions await authorization, counted no further than `cap`: the
 * count stops there, so a full application costs one bounded index scan.
 */
export async function pendingSessions(db: Database, tenantId: string, applicationId: string, now: number, cap: number): Promise<number> {
  const pending = db
    .select({ id: sessions.id })
    .from(sessions)
    .where(
      and(
        eq(sessions.tenantId, tenantId),
        eq(sessions.applicationId, applicationId),
        gt(sessions.expiresAt, now),
        isNull(sessions.expiringApplicationId),
      ),
    )
    .limit(cap)
    .as("pending");
  const [row] = await db.select({ total: count() }).from(pending);
  return row?.total ?? 0;
}

export async function findSessionByNonce(db: Database, tenantId: string, nonceHash: string): Promise<SessionRow | undefined> {
  const [row] = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.tenantId, tenantId), eq(sessions.nonceHash, nonceHash)))
    .limit(1);
  return row;
}

/**
 * Claims the session for the expiring application and inserts that application and its key (the
 * session key's hash), in one batch: each insert runs only when the statement before it changed a
 * row, so a session already claimed, or expired meanwhile, gets nothing written. False then.
 */
export async function authorizeSession(db: Database, session: SessionRow, application: ApplicationRow, key: ApiKeyRow): Promise<boolean> {
  const d1 = db.$client;
  const [claim] = await d1.batch([
    d1
      .prepare(
        `UPDATE sessions SET expiring_application_id = ?, expires_at = ?
         WHERE tenant_id = ? AND id = ? AND expiring_application_id IS NULL AND expires_at > ?`,
      )
      .bind(application.id, application.expiresAt, session.tenantId, session.id, application.createdAt),
    d1
      .prepare(
        `INSERT INTO applications (id, tenant_id, name, type, permissions, rules, created_by, created_at, expires_at)
         SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE changes() = 1`,
      )
      .bind(
        application.id,
        application.tenantId,
        application.name,
        application.type,
        application.permissions,
        application.rules,
        application.createdBy,
        application.createdAt,
        application.expiresAt,
      ),
    d1
      .prepare(
        "INSERT INTO api_keys (id, tenant_id, application_id, hash, created_at, expires_at) SELECT ?, ?, ?, ?, ?, ? WHERE changes() = 1",
      )
      .bind(key.id, key.tenantId, key.applicationId, key.hash, key.createdAt, key.expiresAt),
  ]);
  return (claim?.meta.changes ?? 0) === 1;
}

/**
 * Deletes up to `limit` sessions that ended at or before `now`, with the expiring applications
 * their authorizations made and those applications' keys, in one batch; the sessions deleted.
 */
export async function purgeExpiredSessions(db: Database, now: number, limit: number): Promise<SessionRow[]> {
  const expired = await db.select().from(sessions).where(lte(sessions.expiresAt, now)).limit(limit);
  if (expired.length === 0) return [];
  const d1 = db.$client;
  const ids = JSON.stringify(expired.map((row) => row.id));
  const authorized = JSON.stringify(
    expired.flatMap((row) => (row.expiringApplicationId ? [{ tenant: row.tenantId, application: row.expiringApplicationId }] : [])),
  );
  const pairs = "SELECT value ->> 'tenant', value ->> 'application' FROM json_each(?)";
  await d1.batch([
    d1.prepare(`DELETE FROM api_keys WHERE (tenant_id, application_id) IN (${pairs})`).bind(authorized),
    d1.prepare(`DELETE FROM applications WHERE (tenant_id, id) IN (${pairs}) AND type = 'expiring'`).bind(authorized),
    d1.prepare("DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?))").bind(ids),
  ]);
  return expired;
}
