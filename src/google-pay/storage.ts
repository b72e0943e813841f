import { and, asc, eq, gt, isNull, or } from "drizzle-orm";
import type { Database } from "../db/client";
import { googlePayMerchantKeys, googlePayMerchants, googlePayResources } from "../db/control-tables";
import { isOneOf } from "../db/filters";

export type MerchantRow = typeof googlePayMerchants.$inferSelect;
export type MerchantKeyRow = typeof googlePayMerchantKeys.$inferSelect;
export type ResourceRow = typeof googlePayResources.$inferSelect;

/** Inserts the registration unless the tenant already holds `limit`: false then (one statement, so two creates cannot both pass). */
export async function insertMerchant(db: Database, row: MerchantRow, limit: number): Promise<boolean> {
  const result = await db.$client
    .prepare(
      `INSERT INTO google_pay_merchants (id, tenant_id, merchant_identifier, created_by, created_at)
       SELECT ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM google_pay_merchants WHERE tenant_id = ?) < ?`,
    )
    .bind(row.id, row.tenantId, row.merchantIdentifier, row.createdBy, row.createdAt, row.tenantId, limit)
    .run();
  return result.meta.changes === 1;
}

export async function findMerchant(db: Database, tenantId: string, id: string): Promise<MerchantRow | undefined> {
  const [row] = await db
    .select()
    .from(googlePayMerchants)
    .where(and(eq(googlePayMerchants.tenantId, tenantId), eq(googlePayMerchants.id, id)))
    .limit(1);
  return row;
}

/** The tenant's registrations, oldest first; at most `limit` are read. */
export function merchantsOf(db: Database, tenantId: string, limit: number): Promise<MerchantRow[]> {
  return db
    .select()
    .from(googlePayMerchants)
    .where(eq(googlePayMerchants.tenantId, tenantId))
    .orderBy(asc(googlePayMerchants.createdAt), asc(googlePayMerchants.id))
    .limit(limit);
}

/** Deletes the registration and its keys in one batch; false when the tenant has no such registration. */
export async function deleteMerchant(db: Database, tenantId: string, id: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db
      .delete(googlePayMerchants)
      .where(and(eq(googlePayMerchants.tenantId, tenantId), eq(googlePayMerchants.id, id)))
      .returning({ id: googlePayMerchants.id }),
    db.delete(googlePayMerchantKeys).where(and(eq(googlePayMerchantKeys.tenantId, tenantId), eq(googlePayMerchantKeys.merchantId, id))),
  ]);
  return deleted.length === 1;
}

/** Inserts the key if the merchant exists and holds fewer than `limit`: false otherwise (one statement). */
export async function insertMerchantKey(db: Database, row: MerchantKeyRow, limit: number): Promise<boolean> {
  const result = await db.$client
    .prepare(
      `INSERT INTO google_pay_merchant_keys (id, tenant_id, merchant_id, private_key_ciphertext, fingerprint, created_by, created_at)
       SELECT ?, ?, ?, ?, ?, ?, ?
       WHERE EXISTS (SELECT 1 FROM google_pay_merchants WHERE tenant_id = ? AND id = ?)
         AND (SELECT count(*) FROM google_pay_merchant_keys WHERE tenant_id = ? AND merchant_id = ?) < ?`,
    )
    .bind(
      row.id,
      row.tenantId,
      row.merchantId,
      row.privateKeyCiphertext,
      row.fingerprint,
      row.createdBy,
      row.createdAt,
      row.tenantId,
      row.merchantId,
      row.tenantId,
      row.merchantId,
      limit,
    )
    .run();
  return result.meta.changes === 1;
}

const merchantKey = (tenantId: string, merchantId: string, id: string) =>
  and(eq(googlePayMerchantKeys.tenantId, tenantId), eq(googlePayMerchantKeys.merchantId, merchantId), eq(googlePayMerchantKeys.id, id));

export async function findMerchantKey(db: Database, tenantId: string, merchantId: string, id: string): Promise<MerchantKeyRow | undefined> {
  const [row] = await db
    .select()
    .from(googlePayMerchantKeys)
    .where(merchantKey(tenantId, merchantId, id))
    .limit(1);
  return row;
}

/** The merchant's keys, newest first (at most GOOGLE_PAY.maxKeysPerMerchant). */
export function merchantKeysOf(db: Database, tenantId: string, merchantId: string): Promise<MerchantKeyRow[]> {
  return db
    .select()
    .from(googlePayMerchantKeys)
    .where(and(eq(googlePayMerchantKeys.tenantId, tenantId), eq(googlePayMerchantKeys.merchantId, merchantId)))
    .orderBy(asc(googlePayMerchantKeys.createdAt), asc(googlePayMerchantKeys.id));
}

export async function deleteMerchantKey(db: Database, tenantId: string, merchantId: string, id: string): Promise<boolean> {
  const deleted = await db
    .delete(googlePayMerchantKeys)
    .where(merchantKey(tenantId, merchantId, id))
    .returning({ id: googlePayMerchantKeys.id });
  return deleted.length === 1;
}

export async function insertResource(db: Database, row: ResourceRow): Promise<void> {
  await db.insert(googlePayResources).values(row);
}

const notExpired = (now: number) => or(isNull(googlePayResources.expiresAt), gt(googlePayResources.expiresAt, now));
const liveResource = (tenantId: string, id: string, now: number) =>
  and(eq(googlePayResources.tenantId, tenantId), eq(googlePayResources.id, id), notExpired(now));

/** The tenant's resource unless it expired (the cron deletes it later). */
export async function findLiveResource(db: Database, tenantId: string, id: string, now: number): Promise<ResourceRow | undefined> {
  const [row] = await db
    .select()
    .from(googlePayResources)
    .where(liveResource(tenantId, id, now))
    .limit(1);
  return row;
}

/** The tenant's live resources among `ids`, in one statement of three bound parameters however many ids. */
export async function findLiveResources(db: Database, tenantId: string, ids: string[], now: number): Promise<ResourceRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(googlePayResources)
    .where(and(eq(googlePayResources.tenantId, tenantId), isOneOf(googlePayResources.id, ids), notExpired(now)));
}

/** Deletes the tenant's live resource: the deleted row, or undefined when there was none. */
export async function deleteResource(db: Database, tenantId: string, id: string, now: number): Promise<ResourceRow | undefined> {
  const [row] = await db
    .delete(googlePayResources)
    .where(liveResource(tenantId, id, now))
    .returning();
  return row;
}

/** Deletes up to `limit` resources whose expiry has passed, oldest first; the deleted. */
export async function purgeExpiredResources(d1: D1Database, now: number, limit: number): Promise<{ tenantId: string; id: string }[]> {
  const { results } = await d1
    .prepare(
      `DELETE FROM google_pay_resources WHERE id IN (
         SELECT id FROM google_pay_resources WHERE expires_at <= ? ORDER BY expires_at LIMIT ?
       ) RETURNING tenant_id AS tenantId, id`,
    )
    .bind(now, limit)
    .all<{ tenantId: string; id: string }>();
  return results;
}

/** Drops the sealed cryptogram of up to `limit` resources whose retention has ended; how many. */
export async function clearExpiredAuthentications(d1: D1Database, now: number, limit: number): Promise<number> {
  const result = await d1
    .prepare(
      `UPDATE google_pay_resources SET authentication_ciphertext = NULL, authentication_expires_at = NULL WHERE id IN (
         SELECT id FROM google_pay_resources WHERE authentication_expires_at <= ? ORDER BY authentication_expires_at LIMIT ?
       )`,
    )
    .bind(now, limit)
    .run();
  return result.meta.changes;
}
