import { and, count, eq, isNull, lt, ne, or, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { keyRotations, tenantKeys, tenants } from "../db/control-tables";

export type KeyRecord = typeof tenantKeys.$inferSelect;
export type Rotation = typeof keyRotations.$inferSelect;

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

// Data-key rotations.

export async function findRotation(db: Database, tenantId: string): Promise<Rotation | undefined> {
  const [row] = await db.select().from(keyRotations).where(eq(keyRotations.tenantId, tenantId));
  return row;
}

/**
 * Stores the new version's record and the rotation in one batch. The rotation replaces only a
 * finished one, and the record's (tenant, version) key refuses a second start of the same version:
 * of two concurrent starts one fails whole. So does a start while the tenant is being moved
 * (isTenantMovingError): the batch's first statement then sets the tenant's database to NULL,
 * which NOT NULL refuses (as the idempotency commit mark does). A move started at the same time
 * either is seen here or sees the rotation (insertMove).
 */
export async function insertRotation(db: Database, record: KeyRecord, rotation: Rotation): Promise<void> {
  const { tenantId: _tenantId, ...changes } = rotation;
  await db.batch([
    db
      .update(tenants)
      .set({ database: sql`NULL` })
      .where(and(eq(tenants.id, rotation.tenantId), sql`EXISTS (SELECT 1 FROM tenant_moves WHERE tenant_id = ${rotation.tenantId})`)),
    insertKeyRecord(db, record),
    db
      .insert(keyRotations)
      .values(rotation)
      .onConflictDoUpdate({ target: keyRotations.tenantId, set: changes, setWhere: eq(keyRotations.state, "done") }),
  ]);
}

/** The failure of an insertRotation whose tenant is being moved. */
export function isTenantMovingError(error: unknown): boolean {
  return error instanceof Error && /NOT NULL constraint failed: tenants\.database/.test(error.message);
}

/** Takes the rotation for `runner` until `leaseUntil`: its own chain, or any once the holder's lease ran out. */
export async function claimRotation(
  db: Database,
  tenantId: string,
  runner: string,
  now: number,
  leaseUntil: number,
): Promise<Rotation | undefined> {
  const [row] = await db
    .update(keyRotations)
    .set({ runner, leaseUntil })
    .where(
      and(
        eq(keyRotations.tenantId, tenantId),
        ne(keyRotations.state, "done"),
        or(eq(keyRotations.runner, runner), lt(keyRotations.leaseUntil, now)),
      ),
    )
    .returning();
  return row;
}

/** Changes the rotation while `runner` holds it: undefined when it lost the lease. */
export async function updateRotation(
  db: Database,
  rotation: Pick<Rotation, "tenantId" | "runner">,
  changes: Partial<Rotation>,
): Promise<Rotation | undefined> {
  const [row] = await db
    .update(keyRotations)
    .set(changes)
    .where(and(eq(keyRotations.tenantId, rotation.tenantId), eq(keyRotations.runner, rotation.runner)))
    .returning();
  return row;
}

/** Rotations not done whose lease ran out: their chain of messages stopped. */
export function stoppedRotations(db: Database, now: number, limit: number): Promise<Rotation[]> {
  return db
    .select()
    .from(keyRotations)
    .where(and(ne(keyRotations.state, "done"), lt(keyRotations.leaseUntil, now)))
    .limit(limit);
}

/**
 * Destroys the versions older than the rotation's, in the batch that marks it done (while `runner`
 * holds it); the tenant's keys are no longer derivable from the keyring either.
 */
export async function finishRotation(db: Database, rotation: Rotation, now: number): Promise<boolean> {
  const finishedHere = sql`EXISTS (SELECT 1 FROM key_rotations r WHERE r.tenant_id = ${rotation.tenantId} AND r.runner = ${rotation.runner} AND r.state = 'done')`;
  const [done] = await db.batch([
    db
      .update(keyRotations)
      .set({ state: "done", stateStartedAt: now, finishedAt: now, lastError: null })
      .where(and(eq(keyRotations.tenantId, rotation.tenantId), eq(keyRotations.runner, rotation.runner)))
      .returning(),
    db.delete(tenantKeys).where(and(eq(tenantKeys.tenantId, rotation.tenantId), lt(tenantKeys.version, rotation.toVersion), finishedHere)),
    db
      .update(tenants)
      .set({ keysDerived: false })
      .where(and(eq(tenants.id, rotation.tenantId), finishedHere)),
  ]);
  return done.length === 1;
}
