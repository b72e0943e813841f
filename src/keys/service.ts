/**
 * Envelope encryption: each tenant's data keys are random, stored wrapped by the deployment's
 * keyring (src/crypto/keyring.ts) in `tenant_keys` (control database), and unwrapped once per
 * isolate. Tenants created before envelope encryption have version-1 keys derived from keyring
 * version 1; they are stored wrapped on first use, or all at once by `rewrapKeys`.
 */
import { DEPLOYMENT_TENANT } from "../audit/entry";
import { credentialsChanged, LookupCache } from "../auth/lookup-cache";
import type { RequestContext } from "../context";
import { Keyring } from "../crypto/keyring";
import { DataKeys, newMaterial, TenantKeys } from "../crypto/tenant-keys";
import { NotFoundError } from "../errors";
import * as storage from "./storage";

/** Key records by tenant, for the credentials' time to live: a rotation reaches every isolate within it. */
const records = new LookupCache<storage.KeyRecord[]>({ entries: 100_000, weight: 50_000_000 }, (rows) =>
  rows.reduce((weight, row) => weight + 96 + row.wrapped.length, 0),
);

/** Unwrapped and imported keys, by keyring and wrapped record: unwrapping costs an AES-GCM and four imports. */
const imported = new WeakMap<Keyring, Map<string, DataKeys>>();
const IMPORTED_LIMIT = 4_096;

/** The tenant's data keys, every version it holds. */
export async function tenantKeysOf(context: RequestContext, tenantId: string): Promise<TenantKeys> {
  const keyring = Keyring.of(context.config.keyring);
  let rows = await records.lookup(
    tenantId,
    context.config.CREDENTIAL_CACHE_TTL_MS,
    () => storage.keyRecords(context.control, tenantId),
    (found) => found.length > 0,
  );
  if (rows.length === 0) rows = await storeDerivedKeys(context, keyring, tenantId);
  return keysOfRecords(keyring, tenantId, rows);
}

/** The tenant's data keys as stored now, past this isolate's cache: what a rotation's steps work with. */
export async function storedTenantKeys(context: RequestContext, tenantId: string): Promise<TenantKeys> {
  const rows = await storage.keyRecords(context.control, tenantId);
  if (rows.length === 0) throw new NotFoundError(`Tenant ${tenantId}`);
  return keysOfRecords(Keyring.of(context.config.keyring), tenantId, rows);
}

async function keysOfRecords(keyring: Keyring, tenantId: string, rows: storage.KeyRecord[]): Promise<TenantKeys> {
  return new TenantKeys(tenantId, await Promise.all(rows.map((row) => importRecord(keyring, row))));
}

/** A new tenant's first keys, to insert with the tenant itself. */
export async function newTenantKeys(context: RequestContext, tenantId: string): Promise<storage.KeyRecord> {
  const keyring = Keyring.of(context.config.keyring);
  const { kekVersion, wrapped } = await keyring.wrap(newMaterial(), tenantId, 1);
  return { tenantId, version: 1, kekVersion, wrapped, createdAt: Date.now() };
}

async function importRecord(keyring: Keyring, row: storage.KeyRecord): Promise<DataKeys> {
  let cache = imported.get(keyring);
  if (!cache) {
    cache = new Map();
    imported.set(keyring, cache);
  }
  const id = `${row.tenantId}\u0000${row.version}\u0000${row.wrapped}`;
  let keys = cache.get(id);
  if (!keys) {
    keys = await DataKeys.import(row.version, await keyring.unwrap(row.wrapped, row.tenantId, row.version));
    if (cache.size >= IMPORTED_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(id, keys);
  }
  return keys;
}

/**
 * The version-1 keys of a tenant that predates envelope encryption, derived from keyring version 1
 * and stored wrapped by the newest key. Any other tenant without keys has been shredded (or never
 * existed): nothing is derived for it.
 */
async function storeDerivedKeys(context: RequestContext, keyring: Keyring, tenantId: string): Promise<storage.KeyRecord[]> {
  if (tenantId !== DEPLOYMENT_TENANT && !(await storage.keysDerived(context.control, tenantId))) {
    throw new NotFoundError(`Tenant ${tenantId}`);
  }
  const { kekVersion, wrapped } = await keyring.wrap(await keyring.derivedMaterial(tenantId), tenantId, 1);
  await storage.insertKeyRecord(context.control, { tenantId, version: 1, kekVersion, wrapped, createdAt: Date.now() }, true);
  return storage.keyRecords(context.control, tenantId);
}

/** Records one rewrap call handles at most. */
export const REWRAP_MAX = 500;

/**
 * Re-wraps up to `limit` key records under the keyring's newest key (storing derived keys first):
 * no token is touched. Once `remaining` is 0, older keys may leave VAULT_MASTER_KEYS.
 */
export async function rewrapKeys(context: RequestContext, limit = REWRAP_MAX) {
  const keyring = Keyring.of(context.config.keyring);
  const wrapping = keyring.wrappingVersion;
  let rewrapped = 0;
  const awaiting = await storage.tenantsAwaitingRecords(context.control, limit);
  if (await deploymentAwaitsKeys(context)) awaiting.push(DEPLOYMENT_TENANT);
  for (const tenantId of awaiting) {
    await storeDerivedKeys(context, keyring, tenantId);
    rewrapped++;
  }
  for (const record of await storage.recordsWrappedBefore(context.control, wrapping, Math.max(0, limit - rewrapped))) {
    const material = await keyring.unwrap(record.wrapped, record.tenantId, record.version);
    const { kekVersion, wrapped } = await keyring.wrap(material, record.tenantId, record.version);
    await storage.rewrapRecord(context.control, record, kekVersion, wrapped);
    rewrapped++;
  }
  credentialsChanged();
  return { kek_version: wrapping, rewrapped, ...(await keyringStatus(context)) };
}

/** What the keyring wraps: how many records under each version, and how many still wait for the newest. */
export async function keyringStatus(context: RequestContext) {
  const keyring = Keyring.of(context.config.keyring);
  const perKek = await storage.recordsPerKek(context.control);
  const derived = await storage.countTenantsAwaitingRecords(context.control);
  const older = [...perKek].reduce((sum, [version, n]) => (version < keyring.wrappingVersion ? sum + n : sum), 0);
  const deploymentAwaiting = (await deploymentAwaitsKeys(context)) ? 1 : 0;
  return {
    keyring_versions: keyring.versions,
    records_by_kek_version: Object.fromEntries([...perKek].map(([version, n]) => [String(version), n])),
    tenants_with_derived_keys: derived + deploymentAwaiting,
    remaining: older + derived + deploymentAwaiting,
  };
}

/** The deployment's own log (no tenants row) has derived keys until its first entry stores them. */
async function deploymentAwaitsKeys(context: RequestContext): Promise<boolean> {
  return (await storage.keyRecords(context.control, DEPLOYMENT_TENANT)).length === 0;
}
