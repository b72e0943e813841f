import { env } from "cloudflare:test";
import { expect } from "vitest";
import { call, type Tenant } from "./harness";

/*
 * Apple Pay on the web's tests read what Apple's servers received: the fake bound as
 * APPLE_PAY_GATEWAY (test/support/fake-apple-pay-gateway.mjs) records every request. Each tenant's
 * requests carry its id (Apple's partnerInternalMerchantIdentifier and the session's
 * merchantIdentifier), so a test reads only its own tenant's.
 */

export interface Received {
  method: string;
  url: string;
  body: Record<string, any>;
}

/** What Apple received for the tenant (registrations name it as the merchant, sessions too). */
export async function receivedFor(tenant: Tenant): Promise<Received[]> {
  const all = (await (await env.APPLE_PAY_GATEWAY.fetch("https://fake-apple.test/received")).json()) as Received[];
  return all.filter(
    (request) =>
      request.body?.partnerInternalMerchantIdentifier === tenant.tenantId || request.body?.merchantIdentifier === tenant.tenantId,
  );
}

export const REGISTER = "https://apple-pay-gateway.apple.com/paymentservices/registerMerchant";
export const UNREGISTER = "https://apple-pay-gateway.apple.com/paymentservices/unregisterMerchant";
export const PAYMENT_SESSION = "https://apple-pay-gateway.apple.com/paymentservices/paymentSession";

/** A domain no other test uses: its first label, then the tenant's. */
export const domainOf = (tenant: Tenant, label: string) => `${label}.t${tenant.tenantId.slice(0, 8)}.example.com`;

/** The tenant's domains as GET /apple-pay/domain-registration lists them. */
export async function domainsOf(tenant: Tenant): Promise<string[]> {
  const reply = await call("GET", "/apple-pay/domain-registration", { key: tenant.managementKey });
  expect(reply.status).toBe(200);
  return reply.body.domains.map(({ domain }: { domain: string }) => domain);
}
