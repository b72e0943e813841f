import { and, eq } from "drizzle-orm";
import { SECRET_MAX_LENGTH, sha256Hex } from "../crypto/secrets";
import { LookupCache } from "./lookup-cache";
import type { Database } from "../db/client";
import { apiKeys, applications } from "../db/schema";
import type { AccessRule, Principal } from "./access";
import type { Permission } from "./permissions";

/** The columns of an application that `principalOf` reads: select them, or nest them in a join. */
export const principalColumns = {
  tenantId: applications.tenantId,
  applicationId: applications.id,
  type: applications.type,
  permissions: applications.permissions,
  rules: applications.rules,
};

/**
 * Recent API key lookups, by the key itself (which this isolate holds for the request anyway), so
 * that a reused lookup costs no hashing. An application may hold long rules, so entries are weighed
 * by their characters as well as counted.
 */
const recentPrincipals = new LookupCache<Principal | null>({ entries: 10_000, weight: 4_000_000 }, (principal) =>
  JSON.stringify(principal).length,
);

/**
 * The principal an API key stands for, or null for an unknown or revoked key: one indexed lookup,
 * which an isolate reuses for `ttlMs` (0: never; see LookupCache for how staleness is bounded).
 */
export async function principalForKey(db: Database, apiKey: string, ttlMs = 0): Promise<Principal | null> {
  if (apiKey.length > SECRET_MAX_LENGTH) return null;
  return recentPrincipals.lookup(
    apiKey,
    ttlMs,
    async () => readPrincipalForKey(db, await sha256Hex(apiKey)),
    (principal) => principal !== null,
  );
}

async function readPrincipalForKey(db: Database, hash: string): Promise<Principal | null> {
  const [row] = await db
    .select(principalColumns)
    .from(apiKeys)
    .innerJoin(applications, and(eq(applications.id, apiKeys.applicationId), eq(applications.tenantId, apiKeys.tenantId)))
    .where(eq(apiKeys.hash, hash))
    .limit(1);
  return row ? principalOf(row) : null;
}

/** The principal of an application row (used for proxies' and reactors' applications too). */
export function principalOf(row: {
  tenantId: string;
  applicationId: string;
  type: "private" | "public" | "management";
  permissions: string;
  rules: string;
}): Principal {
  return {
    tenantId: row.tenantId,
    applicationId: row.applicationId,
    applicationType: row.type,
    permissions: JSON.parse(row.permissions) as Permission[],
    rules: JSON.parse(row.rules) as AccessRule[],
  };
}

/** The principal of one of the tenant's applications, by id; null when it does not exist. */
export async function principalForApplication(
  db: Database,
  tenantId: string,
  applicationId: string,
): Promise<Principal | null> {
  const [row] = await db
    .select(principalColumns)
    .from(applications)
    .where(and(eq(applications.tenantId, tenantId), eq(applications.id, applicationId)))
    .limit(1);
  return row ? principalOf(row) : null;
}
