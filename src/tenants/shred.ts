/**
 * Crypto-shredding: deleting a tenant destroys its wrapped data keys first, in the same batch that
 * removes everything that authenticates as it, so every ciphertext it left is unreadable at once.
 * Its rows in the data database are then purged by the cron in bounded batches, and the tenant's
 * directory row goes last, leaving a tombstone (shredded_tenants) so that the id never comes back.
 */
import { credentialsChanged } from "../auth/lookup-cache";
import type { RequestContext } from "../context";
import { tenantPrefixOf } from "../documents/storage";
import { ConflictError, NotFoundError } from "../errors";
import { isoTime } from "../http/schemas";
import { purgeTenantData, tenantRowCounts } from "./data-copy";
import { findMove, isMovingError, unlessMoving } from "./storage";

/** Control-database tables holding what authenticates as a tenant (formulas: only its own, not official ones). */
const CONTROL_TABLES = [
  "api_keys",
  "applications",
  "sessions",
  "console_sessions",
  "proxies",
  "reactors",
  "reactor_formulas",
  "webhooks",
  "webhook_deliveries",
  "client_encryption_keys",
  "google_pay_merchants",
  "google_pay_merchant_keys",
  "google_pay_resources",
  "apple_pay_merchants",
  "apple_pay_certificates",
  "documents",
  "apple_pay_tokens",
  "apple_pay_domains",
  // No credential, but the tenant's idempotency keys as its clients chose them, beside outcomes no key opens any more.
  "idempotency_marks",
];

/** Documents' objects one purge step deletes per tenant (one R2 list and one delete call). */
const DOCUMENT_PURGE_BATCH = 1_000;

/** Tokens (with their index rows), then audit entries, one purge step deletes per tenant. */
export const SHRED_PURGE_BATCH = 1_000;

export interface ShredStatus {
  tenant_id: string;
  shredded_at: string;
  /** The tenant's keys were derived from keyring version 1 (it predates envelope encryption): its data stays derivable until that version leaves the keyring. */
  derived_keys: boolean;
  /** Rows still waiting in its data database (the cron purges them). */
  remaining_rows: number;
}

interface TenantRow {
  database: string;
  shreddedAt: number | null;
  keysDerived: number;
}

async function tenantRow(context: RequestContext, tenantId: string): Promise<TenantRow | null> {
  return context.control.$client
    .prepare("SELECT database, shredded_at AS shreddedAt, keys_derived AS keysDerived FROM tenants WHERE id = ?")
    .bind(tenantId)
    .first<TenantRow>();
}

/**
 * Destroys the tenant's data keys and everything that authenticates as it, in one batch; idempotent
 * (a shredded tenant answers its status again until the purge is done, then 404).
 */
export async function shredTenant(context: RequestContext, tenantId: string): Promise<ShredStatus> {
  const control = context.control.$client;
  const row = await tenantRow(context, tenantId);
  if (!row) throw new NotFoundError(`Tenant ${tenantId}`);
  if (row.shreddedAt === null) {
    if (await findMove(context.control, tenantId)) throw beingMoved(tenantId);
    const now = Date.now();
    await control
      .batch([
        // A move started since the check above fails the batch whole (and a move started later sees the shred).
        unlessMoving(control, tenantId),
        // The keys first: from this statement on, nothing the tenant stored can be decrypted.
        control.prepare("DELETE FROM tenant_keys WHERE tenant_id = ?").bind(tenantId),
        // A rotation in progress stops: its chain finds no rotation to claim.
        control.prepare("DELETE FROM key_rotations WHERE tenant_id = ?").bind(tenantId),
        ...controlRowDeletes(control, tenantId),
        control.prepare("UPDATE tenants SET shredded_at = ? WHERE id = ? AND shredded_at IS NULL").bind(now, tenantId),
      ])
      .catch((error: unknown) => {
        throw isMovingError(error) ? beingMoved(tenantId) : error;
      });
    credentialsChanged();
    row.shreddedAt = now;
  }
  return {
    tenant_id: tenantId,
    shredded_at: isoTime(row.shreddedAt)!,
    derived_keys: row.keysDerived === 1,
    remaining_rows: await remainingRows(context.dataDatabase(row.database), tenantId),
  };
}

/** One DELETE of the tenant's rows for each of CONTROL_TABLES. */
function controlRowDeletes(control: D1Database, tenantId: string): D1PreparedStatement[] {
  return CONTROL_TABLES.map((table) => control.prepare(`DELETE FROM ${table} WHERE tenant_id = ?`).bind(tenantId));
}

async function remainingRows(d1: D1Database, tenantId: string): Promise<number> {
  return Object.values(await tenantRowCounts(d1, tenantId)).reduce((sum, n) => sum + n, 0);
}

const beingMoved = (tenantId: string) => new ConflictError(`Tenant ${tenantId} is being moved; finish the move first`);

/**
 * Called by the cron: one bounded purge step (purgeTenantData, as after a move) for each shredded
 * tenant; a tenant with nothing left leaves the directory for a tombstone, in one batch. Answers how
 * many rows went.
 */
export async function purgeShreddedTenants(context: RequestContext): Promise<number> {
  const { results } = await context.control.$client
    .prepare("SELECT id, database FROM tenants WHERE shredded_at IS NOT NULL LIMIT 50")
    .all<{ id: string; database: string }>();
  let deleted = 0;
  const control = context.control.$client;
  for (const { id, database } of results) {
    // A request that read the tenant's keys before the shred may write a row after its batch: each step deletes those.
    await control.batch(controlRowDeletes(control, id));
    const step = await purgeTenantData(context.dataDatabase(database), id, SHRED_PURGE_BATCH);
    deleted += step;
    // Its documents' objects, unreadable since its keys went, leave the bucket too.
    const objects = await context.documents.list({ prefix: tenantPrefixOf(id), limit: DOCUMENT_PURGE_BATCH });
    if (objects.objects.length > 0) await context.documents.delete(objects.objects.map((object) => object.key));
    // purgeTenantData answers exactly the limit while rows may remain.
    if (step !== SHRED_PURGE_BATCH && !objects.truncated) {
      await control.batch([
        control
          .prepare(
            "INSERT OR IGNORE INTO shredded_tenants (tenant_id, shredded_at) SELECT id, shredded_at FROM tenants WHERE id = ? AND shredded_at IS NOT NULL",
          )
          .bind(id),
        control.prepare("DELETE FROM tenants WHERE id = ? AND shredded_at IS NOT NULL").bind(id),
      ]);
    }
  }
  return deleted;
}
