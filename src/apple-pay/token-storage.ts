import { and, eq, gt } from "drizzle-orm";
import type { Database } from "../db/client";
import { applePayTokens } from "../db/control-tables";
import { isOneOf } from "../db/filters";

export type ApplePayTokenRow = typeof applePayTokens.$inferSelect;

const live = (tenantId: string, id: string, now: number) =>
  and(eq(applePayTokens.tenantId, tenantId), eq(applePayTokens.id, id), gt(applePayTokens.expiresAt, now));

export async function insertToken(db: Database, row: ApplePayTokenRow): Promise<void> {
  await db.insert(applePayTokens).values(row);
}

/** The tenant's token, unless it has expired (the cron may not have deleted it yet). */
export async function findLiveToken(db: Database, tenantId: string, id: string, now: number): Promise<ApplePayTokenRow | undefined> {
  const [row] = await db
    .select()
    .from(applePayTokens)
    .where(live(tenantId, id, now))
    .limit(1);
  return row;
}

/** The tenant's live tokens among `ids`, in one statement of three bound parameters however many ids. */
export async function findLiveTokens(db: Database, tenantId: string, ids: string[], now: number): Promise<ApplePayTokenRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(applePayTokens)
    .where(and(eq(applePayTokens.tenantId, tenantId), isOneOf(applePayTokens.id, ids), gt(applePayTokens.expiresAt, now)));
}

export async function deleteToken(db: Database, tenantId: string, id: string, now: number): Promise<boolean> {
  const deleted = await db
    .delete(applePayTokens)
    .where(live(tenantId, id, now))
    .returning({ id: applePayTokens.id });
  return deleted.length === 1;
}

/** Deletes up to `limit` expired tokens of any tenant: those deleted. */
export async function purgeExpiredTokens(db: Database, now: number, limit: number): Promise<{ tenantId: string; id: string }[]> {
  const { results } = await db.$client
    .prepare(
      `DELETE FROM apple_pay_tokens WHERE id IN (SELECT id FROM apple_pay_tokens WHERE expires_at <= ? LIMIT ?)
       RETURNING tenant_id AS tenantId, id`,
    )
    .bind(now, limit)
    .all<{ tenantId: string; id: string }>();
  return results;
}

/** Clears the sealed cryptogram of up to `limit` tokens whose retention has ended: how many. */
export async function clearExpiredAuthentications(db: Database, now: number, limit: number): Promise<number> {
  const result = await db.$client
    .prepare(
      `UPDATE apple_pay_tokens SET authentication_ciphertext = NULL, authentication_expires_at = NULL
       WHERE id IN (SELECT id FROM apple_pay_tokens WHERE authentication_expires_at <= ? LIMIT ?)`,
    )
    .bind(now, limit)
    .run();
  return result.meta.changes;
}
