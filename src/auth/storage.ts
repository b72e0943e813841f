import { and, eq, isNotNull, ne, or, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { apiKeys, applications } from "../db/control-tables";
import type { ApplicationType } from "./permissions";

/** The columns of an application that `principalOf` reads: select them, or nest them in a join. */
export const principalColumns = {
  tenantId: applications.tenantId,
  applicationId: applications.id,
  type: applications.type,
  permissions: applications.permissions,
  rules: applications.rules,
  allowedOrigins: applications.allowedOrigins,
};

export type PrincipalColumns = {
  tenantId: string;
  applicationId: string;
  type: ApplicationType;
  permissions: string;
  rules: string;
  allowedOrigins: string;
};

/** The API key that authorized an expiring application's session (applications.authorizer_key_id). */
const authorizers = alias(apiKeys, "authorizers");

/** A key's principal columns, with its id and the expiries `principalForKey` reads. */
export type KeyColumns = PrincipalColumns & {
  keyId: string;
  expiresAt: number | null;
  applicationExpiresAt: number | null;
  authorizerExpiresAt: number | null;
};

/**
 * The application holding the API key with this hash, with the key's expiry, the application's and,
 * for an expiring application, its authorizer's. An expiring application's key is found only while
 * the key that authorized its session still exists: revoking that key, replacing its application's
 * keys or deleting its application ends the session in this one statement, for every route. Without
 * an authorizer recorded, an expiring application's key is found never.
 */
export function applicationOfKeyHash(db: Database, hash: string): Promise<KeyColumns | undefined> {
  return applicationOfKeyWhere(db, eq(apiKeys.hash, hash));
}

/** The same for one of the tenant's keys by its id (a console session's key): undefined once it is revoked. */
export function applicationOfKeyId(db: Database, tenantId: string, keyId: string): Promise<KeyColumns | undefined> {
  return applicationOfKeyWhere(db, and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, keyId))!);
}

async function applicationOfKeyWhere(db: Database, key: SQL): Promise<KeyColumns | undefined> {
  const [row] = await db
    .select({
      ...principalColumns,
      keyId: apiKeys.id,
      expiresAt: apiKeys.expiresAt,
      applicationExpiresAt: applications.expiresAt,
      authorizerExpiresAt: authorizers.expiresAt,
    })
    .from(apiKeys)
    .innerJoin(applications, and(eq(applications.id, apiKeys.applicationId), eq(applications.tenantId, apiKeys.tenantId)))
    .leftJoin(authorizers, and(eq(authorizers.id, applications.authorizerKeyId), eq(authorizers.tenantId, applications.tenantId)))
    .where(and(key, or(ne(applications.type, "expiring"), isNotNull(authorizers.id))))
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
