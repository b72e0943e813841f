import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { APPLE_PAY_WEB } from "../../src/limits";
import { domainOf, domainsOf, REGISTER, receivedFor, UNREGISTER } from "../support/apple-pay-web";
import { entryWhere } from "../support/audit";
import { callConfigured } from "../support/configured";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";

/*
 * Attacks on Apple Pay on the web (attack38c), against the fake of Apple's servers bound as
 * APPLE_PAY_GATEWAY (test/support/fake-apple-pay-gateway.mjs): its `race.` domains hold a
 * registration until a second one arrives, so two requests race past the vault's checks without
 * any timing.
 */

/** What Apple holds registered for the tenant, by replaying what it received. */
async function appleHoldsFor(tenant: Tenant): Promise<string[]> {
  const held = new Set<string>();
  for (const { url, body } of await receivedFor(tenant)) {
    for (const domain of body.domainNames ?? []) {
      if (url === REGISTER) held.add(domain);
      if (url === UNREGISTER) held.delete(domain);
    }
  }
  return [...held].sort();
}

describe("registrations racing past the vault's checks", () => {
  it("two tenants registering one domain at once: one holds it, and Apple's registration of the other is withdrawn", async () => {
    const [first, second] = [await seedTenant(), await seedTenant()];
    const domain = `race.shared.t${first.tenantId.slice(0, 8)}.example.com`;
    const replies = await Promise.all(
      [first, second].map((tenant) => call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } })),
    );
    expect(replies.map(({ status }) => status).sort()).toEqual([200, 409]);
    const [winner, loser] = replies[0]!.status === 200 ? [first, second] : [second, first];
    expect(await domainsOf(winner)).toEqual([domain]);
    expect(await domainsOf(loser)).toEqual([]);
    // Apple holds the domain for the tenant the vault lists, and for no one else.
    expect(await appleHoldsFor(winner)).toEqual([domain]);
    expect(await appleHoldsFor(loser)).toEqual([]);
  });

  it(`a tenant's registrations racing past its count hold it to ${APPLE_PAY_WEB.maxDomainsPerTenant} domains, with Apple's side withdrawn`, async () => {
    const tenant = await seedTenant();
    const domains = Array.from({ length: APPLE_PAY_WEB.maxDomainsPerTenant - 1 }, (_, i) => domainOf(tenant, `d${i}`));
    expect((await call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domains } })).status).toBe(200);
    const racing = ["a", "b"].map((label) => `race.${label}.t${tenant.tenantId.slice(0, 8)}.example.com`);
    const replies = await Promise.all(
      racing.map((domain) => call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } })),
    );
    const held = await domainsOf(tenant);
    expect(held.length).toBeLessThanOrEqual(APPLE_PAY_WEB.maxDomainsPerTenant);
    for (const reply of replies) if (reply.status !== 200) expectProblem(reply, 409);
    expect(await appleHoldsFor(tenant)).toEqual([...held].sort());
  });
});

describe("a session's validation_url, spelled to send the vault's certificate elsewhere", () => {
  const HOST = "apple-pay-gateway.apple.com";
  const PATH = "/paymentservices/paymentSession";

  async function sessionTenant() {
    const tenant = await seedTenant();
    const domain = domainOf(tenant, "checkout");
    expect((await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } })).status).toBe(200);
    const key = (await createApplication(tenant, { type: "public", permissions: ["apple-pay:session"] })).key;
    return { tenant, domain, key };
  }

  it("a spelling the URL standard reads as Apple's endpoint is sent only as Apple's endpoint, normalized", async () => {
    const { tenant, domain, key } = await sessionTenant();
    for (const validationUrl of [
      `https://APPLE-PAY-GATEWAY.Apple.COM${PATH}`,
      `HTTPS://${HOST}${PATH}`,
      `https://${HOST}:443${PATH}`,
      `https://${HOST}:0443${PATH}`,
      `https://apple-pay-gateway%2Eapple.com${PATH}`,
      `https://\uff41pple-pay-gateway.apple.com${PATH}`,
      `https:\\\\${HOST}\\paymentservices\\paymentSession`,
      `https://${HOST}/payment\tservices/paymentSession`,
      `https://${HOST}${PATH}/../paymentSession`,
      `https:${HOST}${PATH}`,
      `https:///${HOST}${PATH}`,
    ]) {
      const before = (await receivedFor(tenant)).length;
      const reply = await call("POST", "/apple-pay/session", {
        key,
        body: { validation_url: validationUrl, display_name: "Shop", domain },
      });
      const sent = (await receivedFor(tenant)).slice(before);
      if (reply.status === 200)
        expect(
          sent.map(({ url }) => url),
          validationUrl,
        ).toEqual([`https://${HOST}${PATH}`]);
      else expect([expectProblem(reply, 400).errors, sent], validationUrl).toEqual([{ validation_url: expect.any(Array) }, []]);
    }
  });

  it("a look-alike host, a trailing dot, an encoded slash or query, userinfo hiding a host, or an overlong URL is a 400 and sends nothing", async () => {
    const { tenant, domain, key } = await sessionTenant();
    for (const validationUrl of [
      `https://xn--pple-pay-gateway-0ob.apple.com${PATH}`,
      `https://\u0430pple-pay-gateway.apple.com${PATH}`,
      `https://${HOST}.${PATH}`,
      `https://${HOST}%2F@evil.example${PATH}`,
      `https://evil.example%23@${HOST}${PATH}`,
      `https://${HOST}%00.evil.example${PATH}`,
      `https://${HOST}/paymentservices%2FpaymentSession`,
      `https://${HOST}/paymentservices/x/..%2FpaymentSession`,
      `https://${HOST}${PATH}%3F`,
      `https://${HOST}${PATH};x`,
      `https://${HOST}${PATH}/`,
      `https://[::ffff:11.32.194.1]${PATH}`,
      `https://${HOST}${PATH}?${"a".repeat(APPLE_PAY_WEB.maxValidationUrlLength)}`,
    ]) {
      const reply = await call("POST", "/apple-pay/session", {
        key,
        body: { validation_url: validationUrl, display_name: "Shop", domain },
      });
      expect(expectProblem(reply, 400).errors, validationUrl).toHaveProperty("validation_url");
    }
    expect((await receivedFor(tenant)).map(({ url }) => url)).toEqual([REGISTER]);
  });
});

describe("the audit of Apple Pay on the web", () => {
  it("every session request, answered, refused by the vault or by Apple, is an entry holding neither the URL, the name nor Apple's session", async () => {
    const tenant = await seedTenant();
    const domain = domainOf(tenant, "audited");
    expect((await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } })).status).toBe(200);
    const key = (await createApplication(tenant, { type: "public", permissions: ["apple-pay:session"] })).key;
    const evilUrl = "https://evil-audit.example/paymentservices/paymentSession";
    const replies = [
      await call("POST", "/apple-pay/session", { key, body: { display_name: "Audited Store", domain } }),
      await call("POST", "/apple-pay/session", { key, body: { validation_url: evilUrl, display_name: "Audited Store", domain } }),
      await call("POST", "/apple-pay/session", { key, body: { display_name: "refused-audit", domain } }),
    ];
    expect(replies.map(({ status }) => status)).toEqual([200, 400, 422]);
    const session = JSON.parse(replies[0]!.body).merchantSessionIdentifier as string;
    for (const status of [200, 400, 422]) {
      const entry = await entryWhere(
        tenant,
        { entity_type: "apple-pay-session" },
        (candidate) => candidate.status === status && candidate.operation === "create",
      );
      expect(entry, String(status)).toMatchObject({ entity_id: null, message: "Requested Apple Pay merchant session" });
      for (const secret of [evilUrl, "Audited Store", "refused-audit", session, "Payment Services Exception"]) {
        expect(JSON.stringify(entry), String(status)).not.toContain(secret);
      }
    }
  });
});

describe("Apple answering without end", () => {
  it(`a body that never ends is read no longer than ${APPLE_PAY_WEB.gatewayTimeoutMs / 1000} s: a 502 that records nothing`, async () => {
    const tenant = await seedTenant();
    const reply = await expectLoggedError(/Apple Pay's gateway gave no usable answer/, () =>
      call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain: domainOf(tenant, "endless") } }),
    );
    expect(expectProblem(reply, 502).detail).toMatch(/no answer within/);
    expect(await domainsOf(tenant)).toEqual([]);
  }, 30_000);
});

describe("a page flooding merchant sessions", () => {
  it("a public key's session requests past its limit from one address are 429s, and Apple is not asked for them", async () => {
    const tenant = await seedTenant();
    const domain = domainOf(tenant, "flood");
    expect((await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } })).status).toBe(200);
    const key = (await createApplication(tenant, { type: "public", permissions: ["apple-pay:session"] })).key;
    // wrangler.toml's own limit per public key and address (60 a minute), in one window of it.
    const limits = { PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT };
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 15_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const headers = { "SVC-API-KEY": key, "CF-Connecting-IP": "203.0.113.38" };
    const body = { display_name: "Flood", domain };
    const statuses = [];
    for (let i = 0; i < 61; i++) statuses.push((await callConfigured(limits, "POST", "/apple-pay/session", { headers, body })).status);
    expect(statuses.slice(0, 60).every((status) => status === 200)).toBe(true);
    expect(statuses[60]).toBe(429);
    expect((await receivedFor(tenant)).filter(({ url }) => url.endsWith("/paymentSession"))).toHaveLength(60);
  }, 60_000);
});
