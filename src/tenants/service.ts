import { insertApplication } from "../applications/service";
import type { Principal } from "../auth/access";
import { MANAGEMENT_PERMISSIONS } from "../auth/permissions";
import type { RequestContext, TenantContext } from "../context";
import { sha256Hex, uuidFrom } from "../crypto/secrets";
import { NotFoundError } from "../errors";
import { isoTime } from "../http/schemas";
import { newTenantKeys } from "../keys/service";
import { placementForNewTenant, requireDataBinding } from "./directory";
import type { TenantResponse, UpdateTenant } from "./schema";
import * as storage from "./storage";

/**
 * A new tenant, placed in the data database named or the one holding the fewest tenants, with a
 * management application holding every management permission.
 */
export async function createTenant(context: RequestContext, input: { name: string; database?: string }) {
  const { name } = input;
  const bindings = context.dataBindings();
  if (input.database !== undefined) requireDataBinding(bindings, input.database);
  const database = await placementForNewTenant(context.control, bindings, input.database);
  const tenant = { id: crypto.randomUUID(), name, database, createdAt: Date.now(), keysDerived: false };
  await storage.insertTenant(context.control, tenant, await newTenantKeys(context, tenant.id));
  const application = await insertApplication(context.placed(tenant.id, database), null, {
    name: `${name} management`,
    type: "management",
    permissions: [...MANAGEMENT_PERMISSIONS],
    rules: [],
    allowed_origins: [],
  });
  return { tenant: { id: tenant.id, name, database, created_at: isoTime(tenant.createdAt)! }, application };
}

function toTenantResponse(row: storage.TenantRow): TenantResponse {
  return {
    id: row.id,
    name: row.name,
    created_by: null,
    created_at: isoTime(row.createdAt)!,
    modified_by: row.modifiedBy,
    modified_at: isoTime(row.modifiedAt),
  };
}

/** The caller's own tenant (GET /tenants/self). */
export async function getOwnTenant(context: TenantContext, _principal: Principal): Promise<TenantResponse> {
  const row = await storage.findLiveTenant(context.control, context.tenantId);
  // A key outlives its tenant's shredding by a credential cache's time to live at most.
  if (!row) throw new NotFoundError(`Tenant ${context.tenantId}`);
  context.audit.describe({ entityId: row.id });
  return toTenantResponse(row);
}

/** Renames the caller's own tenant (PUT /tenants/self): the name is all a tenant may change of itself. */
export async function renameOwnTenant(context: TenantContext, principal: Principal, input: UpdateTenant): Promise<TenantResponse> {
  const row = await storage.renameTenant(context.control, context.tenantId, {
    name: input.name,
    modifiedBy: principal.applicationId,
    modifiedAt: Date.now(),
  });
  if (!row) throw new NotFoundError(`Tenant ${context.tenantId}`);
  context.audit.describe({ entityId: row.id, message: "renamed" });
  return toTenantResponse(row);
}

/** Bootstrap keys this isolate has made usable (settled only: see ensureBootstrap). */
const bootstrapped = new Set<string>();

/**
 * Makes BOOTSTRAP_API_KEY usable: a tenant and a management application holding it. Ids derive
 * from the key's hash and the whole thing is one batch that only inserts while that tenant does not
 * exist and was never shredded, so concurrent isolates agree, a bootstrap key revoked later stays
 * revoked, and a shredded bootstrap tenant never comes back (its key answers 401). A read comes
 * first, so that only the first isolate of a vault makes data keys and writes.
 */
export async function ensureBootstrap(context: RequestContext, bootstrapKey: string): Promise<void> {
  // Requests that arrive before the first bootstrap has finished each run it (it is idempotent)
  // rather than wait on another request's (docs/architecture.md, "Isolate-wide state").
  if (bootstrapped.has(bootstrapKey)) return;
  await runBootstrap(context, bootstrapKey);
  bootstrapped.add(bootstrapKey);
}

async function runBootstrap(context: RequestContext, bootstrapKey: string): Promise<void> {
  const hash = await sha256Hex(bootstrapKey);
  const tenantId = uuidFrom(await sha256Hex(`bootstrap-tenant/${hash}`));
  // Read first: every isolate of a bootstrapped vault finds it, and only the first one writes.
  const { shreddedAt } = (await storage.findBootstrapTenant(context.control, tenantId)) ?? (await insertBootstrap(context, tenantId, hash));
  if (shreddedAt !== null) {
    console.warn(
      `BOOTSTRAP_API_KEY names tenant ${tenantId}, shredded at ${isoTime(shreddedAt)}: it is not created again, and the key is refused. ` +
        "Set another BOOTSTRAP_API_KEY to bootstrap a new tenant.",
    );
  }
}

async function insertBootstrap(context: RequestContext, tenantId: string, hash: string): Promise<{ shreddedAt: number | null }> {
  return await storage.insertBootstrapTenant(context.control, {
    tenantId,
    // The first data database: every isolate must agree without reading anything.
    database: context.dataBindings()[0]!,
    applicationId: uuidFrom(await sha256Hex(`bootstrap-application/${hash}`)),
    keyId: uuidFrom(await sha256Hex(`bootstrap-key/${hash}`)),
    keyHash: hash,
    permissions: MANAGEMENT_PERMISSIONS,
    now: Date.now(),
    keys: await newTenantKeys(context, tenantId),
  });
}
