import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, applications } from "../db/control-tables";

/** The columns of an application that `principalOf` reads: select them, or nest them in a join. */
export const principalColumns = {
  tenantId: applications.tenantId,
  applicationId: applications.id,
  type: applications.type,
  permissions: applications.permissions,
  rules: applications.rules,
};

export type PrincipalColumns = {
  tenantId: string;
  applicationId: string;
  type: "private" | "public" | "management";
  permissions: string;
  rules: string;
};

/** The application holding the API key with this hash. */
export async function applicationOfKeyHash(
  db: Database,
  hash: string,
): Promise<(PrincipalColumns & { keyId: string; expiresAt: number | null }) | undefined> {
  const [row] = await db
    .select({ ...principalColumns, keyId: apiKeys.id, expiresAt: apiKeys.expiresAt })
    .from(apiKeys)
    .innerJoin(applications, and(eq(applications.id, apiKeys.applicationId), eq(applications.tenantId, apiKeys.tenantId)))
    .where(eq(apiKeys.hash, hash))
    .limit(1);
  return row;
}

export async function applicationOfTenant(db: Database, tenantId: string, applicationId: string): Promise<PrincipalColumns | undefined> {
  const [row] = await db
    .select(principalColumns)
    .from(applications)
    .where(and(eq(applications.tenantId, tenantId), eq(applications.id, applicationId)))
    .limit(1);
  return row;
}
