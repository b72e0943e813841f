/**
 * The directory: which data database holds a tenant. One row per tenant in the control database
 * (`tenants.database`), read through a per-isolate cache with the credentials' time to live, so a
 * request whose credential is cached reads no directory either.
 */
import { LookupCache } from "../auth/lookup-cache";
import type { Database } from "../db/client";
import * as storage from "./storage";

const placements = new LookupCache<string | null>({ entries: 100_000, weight: 10_000_000 }, (binding) => 64 + (binding?.length ?? 0));

/** The binding of the tenant's data database; null for a tenant the directory does not know. */
export function placementOf(control: Database, tenantId: string, ttlMs: number): Promise<string | null> {
  return placements.lookup(
    tenantId,
    ttlMs,
    () => storage.placementOf(control, tenantId),
    (binding) => binding !== null,
  );
}

/** Where a new tenant goes: the data database named, or the one holding the fewest tenants (the first on a tie). */
export async function placementForNewTenant(control: Database, bindings: string[], named?: string): Promise<string> {
  if (named !== undefined) return named;
  const counts = await storage.tenantsPerDatabase(control);
  return bindings.reduce((best, binding) => ((counts.get(binding) ?? 0) < (counts.get(best) ?? 0) ? binding : best));
}
