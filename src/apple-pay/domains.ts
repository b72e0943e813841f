/**
 * Apple Pay on the web's domains: the vault is the merchants' platform with Apple, and registers each
 * tenant's domains under its own identity with the tenant id as the merchant (Apple's
 * `partnerInternalMerchantIdentifier`). The table follows Apple: a row is written only after Apple
 * accepted the domain, and deleted only after Apple let it go (docs/decisions.md, "Apple Pay on the web").
 */
import { and, asc, eq, type SQL, sql } from "drizzle-orm";
import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { applePayDomains } from "../db/control-tables";
import { isOneOf } from "../db/filters";
import { ConflictError, NotFoundError } from "../errors";
import { APPLE_PAY_WEB } from "../limits";
import { postToApple, registrationUrlOf, requireGateway } from "./gateway";
import type { DomainsResponse } from "./web-schema";

export async function listDomains(context: TenantContext): Promise<DomainsResponse> {
  const rows = await context.control
    .select({ domain: applePayDomains.domain })
    .from(applePayDomains)
    .where(eq(applePayDomains.tenantId, context.tenantId))
    .orderBy(asc(applePayDomains.domain));
  return { domains: rows.map(({ domain }) => ({ domain, status: "verified" as const })) };
}

export async function registerDomain(context: TenantContext, principal: Principal, domain: string): Promise<DomainsResponse> {
  const gateway = requireGateway(context);
  const [held] = await heldBy(context, [domain]);
  if (held?.tenantId === context.tenantId) return listDomains(context);
  if (held) throw takenError(domain);
  if ((await countOf(context)) >= APPLE_PAY_WEB.maxDomainsPerTenant) throw tooManyError();
  await register(context, gateway, [domain]);
  await recordRegistered(context, principal, gateway, [domain], APPLE_PAY_WEB.maxDomainsPerTenant);
  return listDomains(context);
}

/** Makes the tenant's list `domains`: the new ones are registered with Apple first, then those left out deregistered. */
export async function registerAllDomains(context: TenantContext, principal: Principal, domains: string[]): Promise<DomainsResponse> {
  const gateway = requireGateway(context);
  const wanted = [...new Set(domains)];
  const held = await heldBy(context, wanted);
  const taken = held.find((row) => row.tenantId !== context.tenantId);
  if (taken) throw takenError(taken.domain);
  const current = (await listDomains(context)).domains.map(({ domain }) => domain);
  const additions = wanted.filter((domain) => !current.includes(domain));
  const removals = current.filter((domain) => !wanted.includes(domain));
  if (additions.length > 0) {
    await register(context, gateway, additions);
    // The domains left out are still held until deregistered below: they are room the list makes.
    await recordRegistered(context, principal, gateway, additions, APPLE_PAY_WEB.maxDomainsPerTenant + removals.length);
  }
  if (removals.length > 0) {
    await unregister(context, gateway, removals);
    await context.control.delete(applePayDomains).where(and(eq(applePayDomains.tenantId, context.tenantId), domainIn(removals)));
  }
  return listDomains(context);
}

export async function deregisterDomain(context: TenantContext, domain: string): Promise<void> {
  const gateway = requireGateway(context);
  const [held] = await heldBy(context, [domain]);
  // Another tenant's domain is answered as an unknown one: nothing tells whose it is.
  if (held?.tenantId !== context.tenantId) throw new NotFoundError(`Apple Pay domain ${domain}`);
  await unregister(context, gateway, [domain]);
  await context.control
    .delete(applePayDomains)
    .where(and(eq(applePayDomains.tenantId, context.tenantId), eq(applePayDomains.domain, domain)));
}

/** Whether the tenant registered the domain (another tenant's is answered the same as none). */
export async function ownsDomain(context: TenantContext, domain: string): Promise<boolean> {
  const [held] = await heldBy(context, [domain]);
  return held?.tenantId === context.tenantId;
}

async function heldBy(context: TenantContext, domains: string[]) {
  if (domains.length === 0) return [];
  return context.control
    .select({ domain: applePayDomains.domain, tenantId: applePayDomains.tenantId })
    .from(applePayDomains)
    .where(domainIn(domains));
}

/** `domain IN` the list, bound as one parameter: a list of 99 would pass D1's 100 bound parameters. */
const domainIn = (domains: string[]): SQL => isOneOf(applePayDomains.domain, domains);

const tooManyError = () =>
  new ConflictError(`The tenant holds ${APPLE_PAY_WEB.maxDomainsPerTenant} Apple Pay domains, the most it may; deregister one first`);

async function countOf(context: TenantContext): Promise<number> {
  const [row] = await context.control
    .select({ count: sql<number>`count(*)` })
    .from(applePayDomains)
    .where(eq(applePayDomains.tenantId, context.tenantId));
  return row?.count ?? 0;
}

/**
 * A domain another tenant holds: that the domain uses this vault is public already (it serves the
 * vault's domain association file), so saying it is taken tells nothing more, and never whose it is.
 */
const takenError = (domain: string) =>
  new ConflictError(`Apple Pay domain ${domain} is registered by another merchant of this vault; it must be deregistered there first`);

/**
 * Records domains Apple registered, all or none, in one statement that re-checks what was checked
 * before Apple was asked: no other tenant holds one, and the tenant's list stays within `room`.
 * When a request that raced past those checks fills either first, Apple's registration of the
 * domains this request does not hold is withdrawn, so Apple holds what the vault lists (a 409).
 */
async function recordRegistered(
  context: TenantContext,
  principal: Principal,
  gateway: Fetcher,
  domains: string[],
  room: number,
): Promise<void> {
  const list = JSON.stringify(domains);
  const { results } = await context.control.$client
    .prepare(
      `INSERT INTO apple_pay_domains (domain, tenant_id, created_by, created_at)
       SELECT value, ?1, ?2, ?3 FROM json_each(?4)
       WHERE NOT EXISTS (
           SELECT 1 FROM apple_pay_domains WHERE domain IN (SELECT value FROM json_each(?4)) AND tenant_id <> ?1)
         AND (SELECT count(*) FROM apple_pay_domains
              WHERE tenant_id = ?1 AND domain NOT IN (SELECT value FROM json_each(?4))) + json_array_length(?4) <= ?5
       ON CONFLICT (domain) DO NOTHING RETURNING domain`,
    )
    .bind(context.tenantId, principal.applicationId, Date.now(), list, room)
    .all<{ domain: string }>();
  if (results.length > 0) return;
  const held = await heldBy(context, domains);
  const mine = new Set(held.filter((row) => row.tenantId === context.tenantId).map((row) => row.domain));
  if (mine.size === domains.length) return;
  await unregister(
    context,
    gateway,
    domains.filter((domain) => !mine.has(domain)),
  );
  const taken = held.find((row) => row.tenantId !== context.tenantId);
  throw taken ? takenError(taken.domain) : tooManyError();
}

function register(context: TenantContext, gateway: Fetcher, domainNames: string[]): Promise<string> {
  const encryptTo = context.config.APPLE_PAY_PLATFORM_INTEGRATOR_ID;
  return postToApple(
    gateway,
    registrationUrlOf(context, "registerMerchant"),
    {
      domainNames,
      partnerInternalMerchantIdentifier: context.tenantId,
      partnerMerchantName: context.tenantId,
      ...(encryptTo ? { encryptTo } : {}),
    },
    "domain registration",
  );
}

function unregister(context: TenantContext, gateway: Fetcher, domainNames: string[]): Promise<string> {
  return postToApple(
    gateway,
    registrationUrlOf(context, "unregisterMerchant"),
    { domainNames, partnerInternalMerchantIdentifier: context.tenantId, reason: "deregistered by the merchant" },
    "domain deregistration",
  );
}
