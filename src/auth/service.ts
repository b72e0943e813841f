import { and, eq } from "drizzle-orm";
import { sha256Hex } from "../crypto/secrets";
import type { Database } from "../db/client";
import { apiKeys, applications } from "../db/schema";
import type { AccessRule, Principal } from "./access";
import type { Permission } from "./permissions";

/**
 * The principal an API key stands for, or null for an unknown or revoked key. One indexed lookup
 * per request and no cache, so a revoked key stops working with the next request.
 */
export async function principalForKey(db: Database, apiKey: string): Promise<Principal | null> {
  const [row] = await db
    .select({
      tenantId: applications.tenantId,
      applicationId: applications.id,
      type: applications.type,
      permissions: applications.permissions,
      rules: applications.rules,
    })
    .from(apiKeys)
    .innerJoin(applications, and(eq(applications.id, apiKeys.applicationId), eq(applications.tenantId, apiKeys.tenantId)))
    .where(eq(apiKeys.hash, await sha256Hex(apiKey)))
    .limit(1);
  if (!row) return null;
  return principalOf(row);
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
    .select({
      tenantId: applications.tenantId,
      applicationId: applications.id,
      type: applications.type,
      permissions: applications.permissions,
      rules: applications.rules,
    })
    .from(applications)
    .where(and(eq(applications.tenantId, tenantId), eq(applications.id, applicationId)))
    .limit(1);
  return row ? principalOf(row) : null;
}
