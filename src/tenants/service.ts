import { MANAGEMENT_PERMISSIONS } from "../auth/permissions";
import { insertApplication } from "../applications/service";
import { sha256Hex } from "../crypto/secrets";
import type { Database } from "../db/client";
import { tenants } from "../db/schema";
import { isoTime } from "../http/schemas";

/** A new tenant with a management application holding every management permission. */
export async function createTenant(db: Database, name: string) {
  const tenant = { id: crypto.randomUUID(), name, createdAt: Date.now() };
  await db.insert(tenants).values(tenant);
  const application = await insertApplication(db, tenant.id, null, {
    name: `${name} management`,
    type: "management",
    permissions: [...MANAGEMENT_PERMISSIONS],
    rules: [],
  });
  return { tenant: { id: tenant.id, name, created_at: isoTime(tenant.createdAt)! }, application };
}

const bootstrapped = new Map<string, Promise<void>>();

/**
 * Makes BOOTSTRAP_API_KEY usable: a tenant and a management application holding it. Ids derive
 * from the key's hash and the whole thing is one batch that only inserts while that tenant does not
 * exist, so concurrent isolates agree, and a bootstrap key revoked later stays revoked.
 */
export function ensureBootstrap(db: Database, bootstrapKey: string): Promise<void> {
  let done = bootstrapped.get(bootstrapKey);
  if (!done) {
    done = runBootstrap(db, bootstrapKey).catch((error) => {
      bootstrapped.delete(bootstrapKey);
      throw error;
    });
    bootstrapped.set(bootstrapKey, done);
  }
  return done;
}

async function runBootstrap(db: Database, bootstrapKey: string): Promise<void> {
  const hash = await sha256Hex(bootstrapKey);
  const tenantId = uuidFrom(await sha256Hex(`bootstrap-tenant/${hash}`));
  const applicationId = uuidFrom(await sha256Hex(`bootstrap-application/${hash}`));
  const keyId = uuidFrom(await sha256Hex(`bootstrap-key/${hash}`));
  const now = Date.now();
  // changes() is the row count of the previous statement in the batch: each insert happens only
  // if the one before it did, i.e. only the first time.
  const d1 = db.$client;
  await d1.batch([
    d1.prepare("INSERT INTO tenants (id, name, created_at) VALUES (?, 'bootstrap', ?) ON CONFLICT DO NOTHING").bind(tenantId, now),
    d1
      .prepare(
        `INSERT INTO applications (id, tenant_id, name, type, permissions, rules, created_at)
         SELECT ?, ?, 'bootstrap', 'management', ?, '[]', ? WHERE changes() = 1`,
      )
      .bind(applicationId, tenantId, JSON.stringify(MANAGEMENT_PERMISSIONS), now),
    d1
      .prepare("INSERT INTO api_keys (id, tenant_id, application_id, hash, created_at) SELECT ?, ?, ?, ?, ? WHERE changes() = 1")
      .bind(keyId, tenantId, applicationId, hash, now),
  ]);
}

/** Formats 32 hex digits of a digest as a version-8 (custom) UUID. */
function uuidFrom(hex: string): string {
  const h = hex.slice(0, 32).split("");
  h[12] = "8";
  h[16] = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  const s = h.join("");
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}
