/**
 * Crypto-shredding: deleting a tenant destroys its wrapped data keys first, in the same batch that
 * removes everything that authenticates as it, so every ciphertext it left is unreadable at once.
 * Its rows in the data database are then purged by the cron in bounded batches, and the tenant's
 * directory row goes last.
 */
import { credentialsChanged } from "../auth/lookup-cache";
import type { RequestContext } from "../context";
import { ConflictError, NotFoundError } from "../http/problem";
import { isoTime } from "../http/schemas";
import { TOKEN_SIDE_TABLE_NAMES } from "../tokens/storage";

/** Control-database tables holding a tenant's own rows (formulas: only the tenant's, not official ones). */
const CONTROL_TABLES = ["api_keys", "applications", "proxies", "reactors", "reactor_formulas", "webhooks", "tenant_keys"];

/** Data-database tables holding a tenant's rows; side tables before tokens, as elsewhere. */
const DATA_TABLES = [...TOKEN_SIDE_TABLE_NAMES, "tokens", "idempotency_records", "audit_log", "audit_pending", "audit_chains"];

/** Rows of each table one purge step deletes per tenant. */
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
    const moving = await control.prepare("SELECT 1 FROM tenant_moves WHERE tenant_id = ?").bind(tenantId).first();
    if (moving) throw new ConflictError(`Tenant ${tenantId} is being moved; finish the move first`);
    const now = Date.now();
    await control.batch([
      // The keys first: from this statement on, nothing the tenant stored can be decrypted.
      control.prepare("DELETE FROM tenant_keys WHERE tenant_id = ?").bind(tenantId),
      ...CONTROL_TABLES.filter((table) => table !== "tenant_keys").map((table) =>
        control.prepare(`DELETE FROM ${table} WHERE tenant_id = ?`).bind(tenantId),
      ),
      control.prepare("UPDATE tenants SET shredded_at = ? WHERE id = ? AND shredded_at IS NULL").bind(now, tenantId),
    ]);
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

async function remainingRows(d1: D1Database, tenantId: string): Promise<number> {
  const counts = await d1.batch(
    DATA_TABLES.map((table) => d1.prepare(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(tenantId)),
  );
  return counts.reduce((sum, result) => sum + ((result.results[0] as { n: number } | undefined)?.n ?? 0), 0);
}

/**
 * Called by the cron: deletes up to SHRED_PURGE_BATCH rows of each table for each shredded tenant;
 * a tenant with none left leaves the directory. Answers the rows deleted.
 */
export async function purgeShreddedTenants(context: RequestContext): Promise<number> {
  const { results } = await context.control.$client
    .prepare("SELECT id, database FROM tenants WHERE shredded_at IS NOT NULL LIMIT 50")
    .all<{ id: string; database: string }>();
  let deleted = 0;
  for (const { id, database } of results) {
    const d1 = context.dataDatabase(database);
    const outcomes = await d1.batch(
      DATA_TABLES.map((table) =>
        d1
          .prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE tenant_id = ? LIMIT ?)`)
          .bind(id, SHRED_PURGE_BATCH),
      ),
    );
    const step = outcomes.reduce((sum, outcome) => sum + outcome.meta.changes, 0);
    deleted += step;
    if (outcomes.every((outcome) => outcome.meta.changes < SHRED_PURGE_BATCH) && (await remainingRows(d1, id)) === 0) {
      await context.control.$client.prepare("DELETE FROM tenants WHERE id = ? AND shredded_at IS NOT NULL").bind(id).run();
    }
  }
  return deleted;
}
