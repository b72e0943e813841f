import { and, eq, lte } from "drizzle-orm";
import type { ApiKeyRow, ApplicationRow } from "../applications/storage";
import type { Database } from "../db/client";
import { sessions } from "../db/control-tables";
import { SESSIONS } from "../limits";

export type SessionRow = typeof sessions.$inferSelect;

export async function findSessionByNonce(db: Database, tenantId: string, nonceHash: string): Promise<SessionRow | undefined> {
  const [row] = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.tenantId, tenantId), eq(sessions.nonceHash, nonceHash)))
    .limit(1);
  return row;
}

/**
 * Stores the authorized session, the expiring application and its key (the session key's hash), in
 * one batch. The session goes in only when its nonce has authorized nothing yet (the unique nonce
 * hash; its id, derived from the key's digest, is the same for the same nonce, so either conflict
 * means the nonce was used) and the public application that created it is still one of the tenant's;
 * each insert after it runs only when the statement before it changed a row. So a nonce authorizes
 * once, and a refused one writes nothing. False then.
 */
export async function authorizeSession(db: Database, session: SessionRow, application: ApplicationRow, key: ApiKeyRow): Promise<boolean> {
  const d1 = db.$client;
  const [claim] = await d1.batch([
    d1
      .prepare(
        `INSERT INTO sessions (id, tenant_id, application_id, key_hash, nonce_hash, created_at, expires_at, expiring_application_id)
         SELECT ?, ?, ?, ?, ?, ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM applications WHERE tenant_id = ? AND id = ? AND type = 'public')
         ON CONFLICT DO NOTHING`,
      )
      .bind(
        session.id,
        session.tenantId,
        session.applicationId,
        session.keyHash,
        session.nonceHash,
        session.createdAt,
        session.expiresAt,
        session.expiringApplicationId,
        session.tenantId,
        session.applicationId,
      ),
    d1
      .prepare(
        `INSERT INTO applications (id, tenant_id, name, type, permissions, rules, created_by, created_at, expires_at, authorizer_key_id)
         SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE changes() = 1`,
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
        application.authorizerKeyId,
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
  // A session row is what keeps its nonce to one authorization: it stays until the nonce has ended too.
  const expired = await db
    .select()
    .from(sessions)
    .where(and(lte(sessions.expiresAt, now), lte(sessions.createdAt, now - SESSIONS.defaultLifetimeMs)))
    .limit(limit);
  if (expired.length === 0) return [];
  const d1 = db.$client;
  const ids = JSON.stringify(expired.map((row) => row.id));
  const authorized = JSON.stringify(expired.map((row) => ({ tenant: row.tenantId, application: row.expiringApplicationId })));
  const pairs = "SELECT value ->> 'tenant', value ->> 'application' FROM json_each(?)";
  await d1.batch([
    d1.prepare(`DELETE FROM api_keys WHERE (tenant_id, application_id) IN (${pairs})`).bind(authorized),
    d1.prepare(`DELETE FROM applications WHERE (tenant_id, id) IN (${pairs}) AND type = 'expiring'`).bind(authorized),
    d1.prepare("DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?))").bind(ids),
  ]);
  return expired;
}
