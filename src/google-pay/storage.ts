import { and, asc, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { googlePayMerchantKeys, googlePayMerchants } from "../db/control-tables";

export type MerchantRow = typeof googlePayMerchants.$inferSelect;
export type MerchantKeyRow = typeof googlePayMerchantKeys.$inferSelect;

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
