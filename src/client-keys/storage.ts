import { and, desc, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { type MarkQuery, markedStatements } from "../db/commit-marks";
import { clientEncryptionKeys } from "../db/control-tables";

export type ClientKeyRow = typeof clientEncryptionKeys.$inferSelect;

const clientKey = (tenantId: string, id: string) => and(eq(clientEncryptionKeys.tenantId, tenantId), eq(clientEncryptionKeys.id, id));

/** Inserts the key unless the tenant already holds `limit`: false then (one statement, so two creates cannot both pass). */
export async function insertClientKey(db: Database, row: ClientKeyRow, limit: number, mark: MarkQuery | null = null): Promise<boolean> {
  const insert = db.$client
    .prepare(
      `INSERT INTO client_encryption_keys (id, tenant_id, private_key_ciphertext, expires_at, created_by, created_at)
       SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM client_encryption_keys WHERE tenant_id = ?) < ?`,
    )
    .bind(row.id, row.tenantId, row.privateKeyCiphertext, row.expiresAt, row.createdBy, row.createdAt, row.tenantId, limit);
  const [result] = await db.$client.batch([insert, ...markedStatements(db, mark)]);
  return result!.meta.changes === 1;
}

export async function findClientKey(db: Database, tenantId: string, id: string): Promise<ClientKeyRow | undefined> {
  const [row] = await db.select().from(clientEncryptionKeys).where(clientKey(tenantId, id)).limit(1);
  return row;
}

/** Every key of the tenant, newest first (a tenant holds at most CLIENT_KEYS.maxPerTenant). */
export function clientKeysOf(db: Database, tenantId: string): Promise<ClientKeyRow[]> {
  return db
    .select()
    .from(clientEncryptionKeys)
    .where(eq(clientEncryptionKeys.tenantId, tenantId))
    .orderBy(desc(clientEncryptionKeys.createdAt), desc(clientEncryptionKeys.id));
}

export async function deleteClientKey(db: Database, tenantId: string, id: string): Promise<boolean> {
  const deleted = await db.delete(clientEncryptionKeys).where(clientKey(tenantId, id)).returning({ id: clientEncryptionKeys.id });
  return deleted.length === 1;
}
