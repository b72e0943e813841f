import type { RequestContext, TenantContext } from "../context";
import { SECRET_MAX_LENGTH, sha256Hex } from "../crypto/secrets";
import { ForbiddenError, UnauthenticatedError, ValidationError } from "../errors";
import type { AccessRule, KeyPrincipal, Principal } from "./access";
import { LookupCache } from "./lookup-cache";
import type { Permission } from "./permissions";
import type { PrincipalColumns } from "./storage";
import * as storage from "./storage";

/**
 * Recent API key lookups, by the key itself (which this isolate holds for the request anyway), so
 * that a reused lookup costs no hashing. An application may hold long rules, so entries are weighed
 * by their characters as well as counted.
 */
const recentPrincipals = new LookupCache<KeyPrincipal | null>(
  { entries: 10_000, weight: 4_000_000 },
  (principal) => JSON.stringify(principal).length,
);

/**
 * The principal an API key stands for, or null for an unknown or revoked key (or a session's key
 * whose authorizer is gone): one indexed lookup, which an isolate reuses for CREDENTIAL_CACHE_TTL_MS
 * (0: never; see LookupCache for how staleness is bounded). An expired key is a 401 of its own,
 * checked on every use, cached or not.
 */
export async function principalForKey(context: RequestContext, apiKey: string): Promise<KeyPrincipal | null> {
  if (apiKey.length > SECRET_MAX_LENGTH) return null;
  const principal = await recentPrincipals.lookup(
    apiKey,
    context.config.CREDENTIAL_CACHE_TTL_MS,
    async () => keyPrincipalOf(await storage.applicationOfKeyHash(context.control, await sha256Hex(apiKey))),
    (found) => found !== null,
  );
  return unexpired(principal);
}

/**
 * The principal of one of the tenant's API keys by its id (a console session's key): the principal
 * `principalForKey` gives for the key itself, null once the key is revoked or its application
 * deleted, reused for CREDENTIAL_CACHE_TTL_MS as that is. An expired key is a 401.
 */
export async function principalForKeyId(context: RequestContext, tenantId: string, keyId: string): Promise<KeyPrincipal | null> {
  const principal = await recentPrincipalsById.lookup(
    `${tenantId}/${keyId}`,
    context.config.CREDENTIAL_CACHE_TTL_MS,
    async () => keyPrincipalOf(await storage.applicationOfKeyId(context.control, tenantId, keyId)),
    (found) => found !== null,
  );
  return unexpired(principal);
}

/** Console sessions' keys by id, kept as the keys' own lookups are. */
const recentPrincipalsById = new LookupCache<KeyPrincipal | null>(
  { entries: 10_000, weight: 4_000_000 },
  (principal) => JSON.stringify(principal).length,
);

function keyPrincipalOf(row: storage.KeyColumns | undefined): KeyPrincipal | null {
  return row
    ? {
        ...principalOf(row),
        credentialId: row.keyId,
        credentialExpiresAt: earliest(row.expiresAt, row.applicationExpiresAt, row.authorizerExpiresAt),
      }
    : null;
}

function unexpired(principal: KeyPrincipal | null): KeyPrincipal | null {
  const expiresAt = principal?.credentialExpiresAt;
  if (expiresAt != null && expiresAt <= Date.now()) {
    throw new UnauthenticatedError(`The API key expired at ${new Date(expiresAt).toISOString()}`);
  }
  return principal;
}

/**
 * A key stops working at the first of its own expiry, its application's (an expiring application's)
 * and the expiry of the key that authorized that application's session; null when none is set.
 */
function earliest(...times: (number | null)[]): number | null {
  const set = times.filter((time) => time !== null);
  return set.length === 0 ? null : Math.min(...set);
}

/** The principal of an application row (used for proxies' and reactors' applications too). */
export function principalOf(row: PrincipalColumns): Principal {
  return {
    tenantId: row.tenantId,
    applicationId: row.applicationId,
    applicationType: row.type,
    permissions: JSON.parse(row.permissions) as Permission[],
    rules: JSON.parse(row.rules) as AccessRule[],
    allowedOrigins: JSON.parse(row.allowedOrigins) as string[],
  };
}

/**
 * A browser names the page that sent a request in `Origin`. A key whose application lists allowed
 * origins answers only those pages and the vault's own (its frames); a request without `Origin`
 * (a server's) is not a browser's and passes.
 */
export function requireAllowedOrigin(principal: Principal, origin: string | undefined, vaultOrigin: string): void {
  if (origin === undefined || principal.allowedOrigins.length === 0) return;
  if (origin === vaultOrigin || principal.allowedOrigins.includes(origin)) return;
  throw new ForbiddenError("This API key may not be used from the page's origin: it is not among its application's allowed_origins");
}

/** The principal of one of the tenant's applications, by id; null when it does not exist. */
export async function principalForApplication(context: TenantContext, applicationId: string): Promise<Principal | null> {
  const row = await storage.applicationOfTenant(context.control, context.tenantId, applicationId);
  return row ? principalOf(row) : null;
}

/**
 * The application a proxy or reactor acts as (for `bt`, detokenization and tokenize): it must be
 * a public or private application of the tenant; a 400 at `application.id` otherwise.
 */
export async function requireActingApplication(context: TenantContext, applicationId: string): Promise<Principal> {
  const principal = await principalForApplication(context, applicationId);
  if (!principal || (principal.applicationType !== "public" && principal.applicationType !== "private")) {
    throw ValidationError.field("application.id", "must be a public or private application of this tenant");
  }
  return principal;
}
