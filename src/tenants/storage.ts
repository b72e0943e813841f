import { and, count, eq, isNull } from "drizzle-orm";
import type { Database } from "../db/client";
import { tenantMoves, tenants } from "../db/control-tables";
import { insertKeyRecord, type KeyRecord } from "../keys/storage";

export type TenantRow = typeof tenants.$inferSelect;

/** A tenant that has not been shredded; undefined otherwise. */
export async function findLiveTenant(db: Database, tenantId: string): Promise<TenantRow | undefined> {
  const [row] = await db
    .select()
    .from(tenants)
    .where(and(eq(tenants.id, tenantId), isNull(tenants.shreddedAt)))
    .limit(1);
  return row;
}

/** Renames a tenant that has not been shredded; undefined when there is none. */
export async function renameTenant(
  db: Database,
  tenantId: string,
  changes: Pick<TenantRow, "name" | "modifiedBy" | "modifiedAt">,
): Promise<TenantRow | undefined> {
  const [row] = await db
    .update(tenants)
    .set(changes)
    .where(and(eq(tenants.id, tenantId), isNull(tenants.shreddedAt)))
    .returning();
  return row;
}

/** The tenant with its first data keys, in one batch. */
export async function insertTenant(db: Database, tenant: typeof tenants.$inferInsert, keys: KeyRecord): Promise<void> {
  await db.batch([db.insert(tenants).values(tenant), insertKeyRecord(db, keys)]);
}

/**
 * Whether the bootstrap tenant exists already, and when it was shredded (a tenant row, or the
 * tombstone left once its rows were purged); null when it was never made. A read, so that a cold
 * isolate of a bootstrapped vault neither makes data keys nor writes.
 */
export async function findBootstrapTenant(db: Database, tenantId: string): Promise<{ shreddedAt: number | null } | null> {
  return await db.$client.prepare(TENANT_STATE).bind(tenantId).first<{ shreddedAt: number | null }>();
}

/** The tenant's row's shredded_at, else its tombstone's; no row when it was never made. */
const TENANT_STATE = `SELECT shredded_at AS shreddedAt FROM tenants WHERE id = ?1
  UNION ALL SELECT shredded_at FROM shredded_tenants WHERE tenant_id = ?1 LIMIT 1`;

/**
 * The bootstrap tenant, its management application and its key, in one batch. changes() is the row
 * count of the previous statement in the batch: each insert happens only if the one before it did,
 * i.e. only the first time.
 */
export async function insertBootstrapTenant(
  db: Database,
  bootstrap: {
    tenantId: string;
    database: string;
    applicationId: string;
    keyId: string;
    keyHash: string;
    permissions: readonly string[];
    now: number;
    keys: KeyRecord;
  },
): Promise<{ shreddedAt: number | null }> {
  const { tenantId, database, applicationId, keyId, keyHash, permissions, now, keys } = bootstrap;
  const d1 = db.$client;
  const [, , , , tombstones] = await d1.batch([
    d1
      .prepare(
        `INSERT INTO tenants (id, name, database, created_at, keys_derived)
         SELECT ?1, 'bootstrap', ?2, ?3, 0 WHERE NOT EXISTS (SELECT 1 FROM shredded_tenants WHERE tenant_id = ?1)
         ON CONFLICT DO NOTHING`,
      )
      .bind(tenantId, database, now),
    d1
      .prepare(
        `INSERT INTO applications (id, tenant_id, name, type, permissions, rules, created_at)
         SELECT ?, ?, 'bootstrap', 'management', ?, '[]', ? WHERE changes() = 1`,
      )
      .bind(applicationId, tenantId, JSON.stringify(permissions), now),
    d1
      .prepare("INSERT INTO api_keys (id, tenant_id, application_id, hash, created_at) SELECT ?, ?, ?, ?, ? WHERE changes() = 1")
      .bind(keyId, tenantId, applicationId, keyHash, now),
    d1
      .prepare("INSERT INTO tenant_keys (tenant_id, version, kek_version, wrapped, created_at) SELECT ?, ?, ?, ?, ? WHERE changes() = 1")
      .bind(tenantId, keys.version, keys.kekVersion, keys.wrapped, keys.createdAt),
    // After the inserts there is always a row: the tenant's, or the tombstone that kept it out.
    d1.prepare(TENANT_STATE).bind(tenantId),
  ]);
  return { shreddedAt: (tombstones!.results[0] as { shreddedAt: number | null }).shreddedAt };
}

/** Where a tenant's data is, whether a move is blocking its writes, and whether it was shredded. */
export interface Placement {
  database: string;
  writesBlocked: boolean;
  /** The tenant was crypto-shredded: its rows may still wait for the purge. */
  shredded: boolean;
}

/** The tenant's placement, or null for an unknown tenant. */
export async function readPlacement(db: Database, tenantId: string): Promise<Placement | null> {
  const [row] = await db
    .select({ database: tenants.database, phase: tenantMoves.phase, shreddedAt: tenants.shreddedAt })
    .from(tenants)
    .leftJoin(tenantMoves, eq(tenantMoves.tenantId, tenants.id))
    .where(eq(tenants.id, tenantId))
    .limit(1);
  return row
    ? { database: row.database, writesBlocked: row.phase === "blocked" || row.phase === "switched", shredded: row.shreddedAt !== null }
    : null;
}

/** How many tenants each data database holds (databases without any are absent). */
export async function tenantsPerDatabase(db: Database): Promise<Map<string, number>> {
  const rows = await db.select({ database: tenants.database, total: count() }).from(tenants).groupBy(tenants.database);
  return new Map(rows.map((row) => [row.database, row.total]));
}

export type TenantMove = typeof tenantMoves.$inferSelect;

export async function findMove(db: Database, tenantId: string): Promise<TenantMove | undefined> {
  const [move] = await db.select().from(tenantMoves).where(eq(tenantMoves.tenantId, tenantId)).limit(1);
  return move;
}

/**
 * Stores the move unless the tenant's data keys are being rotated, it was shredded or a move of it
 * was stored meanwhile: false then. One statement, so a rotation or a shred started at the same
 * time either is seen here or sees the move (insertRotation, unlessMoving).
 */
export async function insertMove(db: Database, move: TenantMove): Promise<boolean> {
  const inserted = await db.$client
    .prepare(
      `INSERT INTO tenant_moves (tenant_id, source, target, phase, cursor, stage, copy_started_at, phase_started_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
       WHERE NOT EXISTS (SELECT 1 FROM key_rotations WHERE tenant_id = ?1 AND state != 'done')
         AND NOT EXISTS (SELECT 1 FROM tenants WHERE id = ?1 AND shredded_at IS NOT NULL)
       ON CONFLICT (tenant_id) DO NOTHING`,
    )
    .bind(move.tenantId, move.source, move.target, move.phase, move.cursor, move.stage, move.copyStartedAt, move.phaseStartedAt)
    .run();
  return inserted.meta.changes === 1;
}

export async function updateMove(db: Database, tenantId: string, changes: Partial<TenantMove>): Promise<void> {
  await db.update(tenantMoves).set(changes).where(eq(tenantMoves.tenantId, tenantId));
}

/** Points the directory at the target and marks the move switched, in one batch. */
export async function switchPlacement(db: Database, tenantId: string, target: string, now: number): Promise<void> {
  await db.batch([
    db.update(tenants).set({ database: target }).where(eq(tenants.id, tenantId)),
    db.update(tenantMoves).set({ phase: "switched", phaseStartedAt: now }).where(eq(tenantMoves.tenantId, tenantId)),
  ]);
}

export async function deleteMove(db: Database, tenantId: string): Promise<void> {
  await db.delete(tenantMoves).where(eq(tenantMoves.tenantId, tenantId));
}

/**
 * For the first place of a batch that must not run while the tenant is being moved (a shred): it
 * sets the tenant's database to NULL when a move exists, which NOT NULL refuses, failing the batch
 * whole (isMovingError), as the idempotency commit mark does.
 */
export function unlessMoving(d1: D1Database, tenantId: string): D1PreparedStatement {
  return d1
    .prepare("UPDATE tenants SET database = NULL WHERE id = ?1 AND EXISTS (SELECT 1 FROM tenant_moves WHERE tenant_id = ?1)")
    .bind(tenantId);
}

/** The failure of a batch led by unlessMoving whose tenant is being moved. */
export function isMovingError(error: unknown): boolean {
  return error instanceof Error && /NOT NULL constraint failed: tenants\.database/.test(error.message);
}
