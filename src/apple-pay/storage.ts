import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { applePayCertificates, applePayMerchants } from "../db/control-tables";

export type MerchantRow = typeof applePayMerchants.$inferSelect;
export type CertificateRow = typeof applePayCertificates.$inferSelect;

const merchant = (tenantId: string, id: string) => and(eq(applePayMerchants.tenantId, tenantId), eq(applePayMerchants.id, id));

/** Inserts the registration unless the tenant already holds `limit`: false then (one statement, so two creates cannot both pass). */
export async function insertMerchant(db: Database, row: MerchantRow, limit: number): Promise<boolean> {
  const result = await db.$client
    .prepare(
      `INSERT INTO apple_pay_merchants (id, tenant_id, merchant_identifier, created_by, created_at)
       SELECT ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM apple_pay_merchants WHERE tenant_id = ?) < ?`,
    )
    .bind(row.id, row.tenantId, row.merchantIdentifier, row.createdBy, row.createdAt, row.tenantId, limit)
    .run();
  return result.meta.changes === 1;
}

export async function findMerchant(db: Database, tenantId: string, id: string): Promise<MerchantRow | undefined> {
  const [row] = await db.select().from(applePayMerchants).where(merchant(tenantId, id)).limit(1);
  return row;
}

/** Deletes the registration and its certificates, their private keys with them, in one batch. */
export async function deleteMerchant(db: Database, tenantId: string, id: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db.delete(applePayMerchants).where(merchant(tenantId, id)).returning({ id: applePayMerchants.id }),
    db
      .delete(applePayCertificates)
      .where(and(eq(applePayCertificates.tenantId, tenantId), eq(applePayCertificates.merchantRegistrationId, id))),
  ]);
  return deleted.length === 1;
}

/**
 * Inserts the certificate when its merchant registration exists and holds fewer than `limit`: false
 * otherwise (one statement, so a delete of the registration or a second create cannot slip between).
 */
export async function insertCertificate(db: Database, row: CertificateRow, limit: number): Promise<boolean> {
  const result = await db.$client
    .prepare(
      `INSERT INTO apple_pay_certificates (id, tenant_id, merchant_registration_id, domain, certificate, public_key_hash,
         fingerprint, private_key_ciphertext, expires_at, created_by, created_at)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
       WHERE EXISTS (SELECT 1 FROM apple_pay_merchants WHERE tenant_id = ? AND id = ?)
         AND (SELECT count(*) FROM apple_pay_certificates WHERE tenant_id = ? AND merchant_registration_id = ?) < ?`,
    )
    .bind(
      row.id,
      row.tenantId,
      row.merchantRegistrationId,
      row.domain,
      row.certificate,
      row.publicKeyHash,
      row.fingerprint,
      row.privateKeyCiphertext,
      row.expiresAt,
      row.createdBy,
      row.createdAt,
      row.tenantId,
      row.merchantRegistrationId,
      row.tenantId,
      row.merchantRegistrationId,
      limit,
    )
    .run();
  return result.meta.changes === 1;
}

const certificate = (tenantId: string, merchantId: string, id: string) =>
  and(
    eq(applePayCertificates.tenantId, tenantId),
    eq(applePayCertificates.merchantRegistrationId, merchantId),
    eq(applePayCertificates.id, id),
  );

export async function findCertificate(db: Database, tenantId: string, merchantId: string, id: string): Promise<CertificateRow | undefined> {
  const [row] = await db
    .select()
    .from(applePayCertificates)
    .where(certificate(tenantId, merchantId, id))
    .limit(1);
  return row;
}

export async function deleteCertificate(db: Database, tenantId: string, merchantId: string, id: string): Promise<boolean> {
  const deleted = await db
    .delete(applePayCertificates)
    .where(certificate(tenantId, merchantId, id))
    .returning({ id: applePayCertificates.id });
  return deleted.length === 1;
}

/** A certificate of the tenant whose public key has this hash (all such hold one key pair), of one registration when named. */
export async function certificateByKeyHash(
  db: Database,
  tenantId: string,
  publicKeyHash: string,
  merchantId: string | undefined,
): Promise<CertificateRow | undefined> {
  const [row] = await db
    .select()
    .from(applePayCertificates)
    .where(
      and(
        eq(applePayCertificates.tenantId, tenantId),
        eq(applePayCertificates.publicKeyHash, publicKeyHash),
        merchantId === undefined ? undefined : eq(applePayCertificates.merchantRegistrationId, merchantId),
      ),
    )
    .limit(1);
  return row;
}
