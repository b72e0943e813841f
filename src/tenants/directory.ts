/**
 * The directory: which data database holds a tenant. One row per tenant in the control database
 * (`tenants.database`), read through a per-isolate cache with the credentials' time to live, so a
 * request whose credential is cached reads no directory either.
 */
import { LookupCache } from "../auth/lookup-cache";
import type { Database } from "../db/client";
import { ValidationError } from "../errors";
import * as storage from "./storage";

const placements = new LookupCache<storage.Placement | null>(
  { entries: 100_000, weight: 10_000_000 },
  (placement) => 64 + (placement?.database.length ?? 0),
);

/**
 * The tenant's data database and whether a move blocks its writes; null for a tenant the directory
 * does not know. A move blocks writes for one time to live before it copies the last changes, so
 * every isolate has seen the block by then.
 */
export function placementOf(control: Database, tenantId: string, ttlMs: number): Promise<storage.Placement | null> {
  return placements.lookup(
    tenantId,
    ttlMs,
    () => storage.readPlacement(control, tenantId),
    (placement) => placement !== null,
  );
}

/** A 400 at `database` unless it names one of the bound data databases. */
export function requireDataBinding(bindings: string[], database: string): void {
  if (!bindings.includes(database)) {
    throw ValidationError.field("database", `must be one of the bound data databases: ${bindings.join(", ")}`);
  }
}

/** Where a new tenant goes: the data database named, or the one holding the fewest tenants (the first on a tie). */
export async function placementForNewTenant(control: Database, bindings: string[], named?: string): Promise<string> {
  if (named !== undefined) return named;
  const counts = await storage.tenantsPerDatabase(control);
  return bindings.reduce((best, binding) => ((counts.get(binding) ?? 0) < (counts.get(best) ?? 0) ? binding : best));
}
