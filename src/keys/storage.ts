import { and, count, eq, isNull, lt, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { tenantKeys, tenants } from "../db/schema";

export type KeyRecord = typeof tenantKeys.$inferSelect;

/** The tenant's data-key records, highest version first. */
export function keyRecords(db: Database, tenantId: string): Promise<KeyRecord[]> {
  return db.select().from(tenantKeys).where(eq(tenantKeys.tenantId, tenantId)).orderBy(sql`${tenantKeys.version} DESC`);
}

/** The statement that stores a record; `ifAbsent` keeps an existing one (two isolates storing derived keys agree). */
export function insertKeyRecord(db: Database, record: KeyRecord, ifAbsent = false) {
  const insert = db.insert(tenantKeys).values(record);
  return ifAbsent ? insert.onConflictDoNothing() : insert;
}

/** Whether the tenant's version-1 keys may be derived from the keyring (it predates envelope encryption). */
export async function keysDerived(db: Database, tenantId: string): Promise<boolean> {
  const [row] = await db
    .select({ keysDerived: tenants.keysDerived })
    .from(tenants)
    .where(and(eq(tenants.id, tenantId), isNull(tenants.shreddedAt)));
  return row?.keysDerived ?? false;
}

/** A live tenant whose keys are still derived and not yet stored wrapped. */
const awaitingRecords = and(
  eq(tenants.keysDerived, true),
  isNull(tenants.shreddedAt),
  sql`NOT EXISTS (SELECT 1 FROM tenant_keys k WHERE k.tenant_id = ${tenants.id})`,
);

/** Tenants whose keys are still derived and not yet stored wrapped. */
export async function tenantsAwaitingRecords(db: Database, limit: number): Promise<string[]> {
  const rows = await db.select({ id: tenants.id }).from(tenants).where(awaitingRecords).limit(limit);
  return rows.map((row) => row.id);
}

export async function countTenantsAwaitingRecords(db: Database): Promise<number> {
  const [row] = await db.select({ n: count() }).from(tenants).where(awaitingRecords);
  return row?.n ?? 0;
}

/** Records wrapped by a key-encryption key older than `kekVersion`. */
export function recordsWrappedBefore(db: Database, kekVersion: number, limit: number): Promise<KeyRecord[]> {
  return db.select().from(tenantKeys).where(lt(tenantKeys.kekVersion, kekVersion)).limit(limit);
}

/** How many records each key-encryption key wraps. */
export async function recordsPerKek(db: Database): Promise<Map<number, number>> {
  const rows = await db.select({ kekVersion: tenantKeys.kekVersion, n: count() }).from(tenantKeys).groupBy(tenantKeys.kekVersion);
  return new Map(rows.map((row) => [row.kekVersion, row.n]));
}

/** Replaces a record's wrapping, unless it changed since it was read. */
export async function rewrapRecord(db: Database, record: KeyRecord, kekVersion: number, wrapped: string): Promise<void> {
  await db
    .update(tenantKeys)
    .set({ kekVersion, wrapped })
    .where(and(eq(tenantKeys.tenantId, record.tenantId), eq(tenantKeys.version, record.version), eq(tenantKeys.wrapped, record.wrapped)));
}
