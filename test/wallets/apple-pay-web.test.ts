import { beforeAll, describe, expect, it } from "vitest";
import { APPLE_PAY_GATEWAY_HOSTS } from "../../src/apple-pay/gateway";
import { APPLE_PAY_WEB } from "../../src/limits";
import { domainOf, domainsOf, PAYMENT_SESSION, REGISTER, receivedFor, UNREGISTER } from "../support/apple-pay-web";
import { callConfigured } from "../support/configured";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";

/*
 * Apple Pay on the web over HTTP: domain registrations and merchant sessions. Apple's servers are the
 * fake bound as APPLE_PAY_GATEWAY (test/support/fake-apple-pay-gateway.mjs), which records what it
 * receives; each tenant's requests carry its id (Apple's partnerInternalMerchantIdentifier and the
 * session's merchantIdentifier), so a test reads only its own tenant's.
 */

/** How Apple's own error messages begin (the fake's too): the vault never repeats them. */
const APPLE_SECRET = "Payment Services Exception";

async function registered(tenant: Tenant, label: string): Promise<string> {
  const domain = domainOf(tenant, label);
  const reply = await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return domain;
}

let sessionKeyOf: (tenant: Tenant) => Promise<string>;
beforeAll(() => {
  const keys = new Map<string, string>();
  sessionKeyOf = async (tenant) => {
    if (!keys.has(tenant.tenantId)) {
      keys.set(tenant.tenantId, (await createApplication(tenant, { type: "public", permissions: ["apple-pay:session"] })).key);
    }
    return keys.get(tenant.tenantId)!;
  };
});

describe("domain registration", () => {
  it("registers a domain with Apple under the tenant as the merchant, lower-cased, and lists it as verified", async () => {
    const tenant = await seedTenant();
    const domain = domainOf(tenant, "shop");
    const reply = await call("POST", "/apple-pay/domain-registration", {
      key: tenant.managementKey,
      body: { domain: domain.toUpperCase() },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ domains: [{ domain, status: "verified" }] });
    expect(await receivedFor(tenant)).toEqual([
      {
        method: "POST",
        url: REGISTER,
        body: { domainNames: [domain], partnerInternalMerchantIdentifier: tenant.tenantId, partnerMerchantName: tenant.tenantId },
      },
    ]);
    expect(await domainsOf(tenant)).toEqual([domain]);
  });

  it("registering a domain the tenant holds changes nothing and asks Apple nothing", async () => {
    const tenant = await seedTenant();
    const domain = await registered(tenant, "again");
    const reply = await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } });
    expect(reply.status).toBe(200);
    expect(await receivedFor(tenant)).toHaveLength(1);
  });

  it("takes only a host name: no scheme, path, port, wildcard, IP address, empty label or overlong name, and sends nothing", async () => {
    const tenant = await seedTenant();
    const label = "a".repeat(63);
    for (const domain of [
      "https://shop.example.com",
      "shop.example.com/path",
      "shop.example.com:443",
      "*.example.com",
      "192.168.0.1",
      "[::1]",
      "localhost",
      "shop..example.com",
      "-shop.example.com",
      "shop.example.com.",
      " shop.example.com",
      "user@shop.example.com",
      `${[label, label, label, label].join(".")}.com`,
      "",
    ]) {
      const reply = await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain } });
      expect(expectProblem(reply, 400).errors, domain).toHaveProperty("domain");
    }
    expect(await receivedFor(tenant)).toEqual([]);
    expect(await domainsOf(tenant)).toEqual([]);
  });

  it("a domain Apple refuses is a 422 that does not repeat Apple's words, and nothing is recorded", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/apple-pay/domain-registration", {
      key: tenant.managementKey,
      body: { domain: domainOf(tenant, "unverified") },
    });
    const problem = expectProblem(reply, 422);
    expect(problem.detail).toMatch(/Apple refused the domain registration \(Apple answered 400\)/);
    expect(JSON.stringify(reply.body)).not.toContain(APPLE_SECRET);
    expect(await domainsOf(tenant)).toEqual([]);
  });

  it("an outage, a redirect or an oversized answer from Apple is a 502 that follows nothing and records nothing", async () => {
    const tenant = await seedTenant();
    for (const label of ["outage", "redirect", "huge"]) {
      const reply = await expectLoggedError(/Apple Pay's gateway gave no usable answer/, () =>
        call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain: domainOf(tenant, label) } }),
      );
      const problem = expectProblem(reply, 502);
      expect(problem.detail, label).toMatch(/nothing was recorded/);
      expect(JSON.stringify(reply.body)).not.toContain(APPLE_SECRET);
    }
    // One request per attempt: the redirect was not followed.
    expect((await receivedFor(tenant)).map(({ url }) => url)).toEqual([REGISTER, REGISTER, REGISTER]);
    expect(await domainsOf(tenant)).toEqual([]);
  });

  it("PUT makes the tenant's list: new domains registered with Apple first, those left out deregistered", async () => {
    const tenant = await seedTenant();
    const [a, b, c] = [domainOf(tenant, "a"), domainOf(tenant, "b"), domainOf(tenant, "c")];
    const first = await call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domains: [a, b, a] } });
    expect(first.body).toEqual({ domains: [a, b].map((domain) => ({ domain, status: "verified" })) });
    const second = await call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domains: [b, c] } });
    expect(second.body.domains.map(({ domain }: { domain: string }) => domain)).toEqual([b, c]);
    expect((await receivedFor(tenant)).map(({ url, body }) => [url, body.domainNames])).toEqual([
      [REGISTER, [a, b]],
      [REGISTER, [c]],
      [UNREGISTER, [a]],
    ]);
    const none = await call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domains: [] } });
    expect(none.body).toEqual({ domains: [] });
  });

  it("PUT with a domain Apple refuses changes nothing", async () => {
    const tenant = await seedTenant();
    const kept = await registered(tenant, "kept");
    const reply = await call("PUT", "/apple-pay/domain-registration", {
      key: tenant.managementKey,
      body: { domains: [domainOf(tenant, "fresh"), domainOf(tenant, "unverified")] },
    });
    expectProblem(reply, 422);
    expect(await domainsOf(tenant)).toEqual([kept]);
  });

  it("a deregistration Apple fails keeps the domain listed: PUT records what Apple registered and answers the 502", async () => {
    const tenant = await seedTenant();
    const sticky = await registered(tenant, "sticky");
    const fresh = domainOf(tenant, "fresh");
    const reply = await expectLoggedError(/Apple Pay's gateway gave no usable answer to the domain deregistration/, () =>
      call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domains: [fresh] } }),
    );
    expectProblem(reply, 502);
    expect(await domainsOf(tenant)).toEqual([fresh, sticky]);
    const alone = await expectLoggedError(/Apple Pay's gateway gave no usable answer/, () =>
      call("POST", "/apple-pay/domain-deregistration", { key: tenant.managementKey, body: { domain: sticky } }),
    );
    expectProblem(alone, 502);
    expect(await domainsOf(tenant)).toEqual([fresh, sticky]);
  });

  it(`holds at most ${APPLE_PAY_WEB.maxDomainsPerTenant} domains a tenant: a longer list is a 400, one more a 409`, async () => {
    const tenant = await seedTenant();
    const domains = Array.from({ length: APPLE_PAY_WEB.maxDomainsPerTenant + 1 }, (_, i) => domainOf(tenant, `d${i}`));
    const tooMany = await call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domains } });
    expect(expectProblem(tooMany, 400).errors).toHaveProperty("domains");
    const full = await call("PUT", "/apple-pay/domain-registration", {
      key: tenant.managementKey,
      body: { domains: domains.slice(0, -1) },
    });
    expect(full.body.domains).toHaveLength(APPLE_PAY_WEB.maxDomainsPerTenant);
    const one = await call("POST", "/apple-pay/domain-registration", { key: tenant.managementKey, body: { domain: domains.at(-1) } });
    expectProblem(one, 409);
    expect(await receivedFor(tenant)).toHaveLength(1);
  });

  it("deregisters a domain with Apple, and a domain the tenant does not hold is a 404", async () => {
    const tenant = await seedTenant();
    const domain = await registered(tenant, "gone");
    const reply = await call("POST", "/apple-pay/domain-deregistration", { key: tenant.managementKey, body: { domain } });
    expect(reply.status).toBe(204);
    expect((await receivedFor(tenant)).at(-1)).toEqual({
      method: "POST",
      url: UNREGISTER,
      body: { domainNames: [domain], partnerInternalMerchantIdentifier: tenant.tenantId, reason: "deregistered by the merchant" },
    });
    expect(await domainsOf(tenant)).toEqual([]);
    expectProblem(await call("POST", "/apple-pay/domain-deregistration", { key: tenant.managementKey, body: { domain } }), 404);
  });

  it("refuses unknown members and a missing list", async () => {
    const tenant = await seedTenant();
    const extra = await call("POST", "/apple-pay/domain-registration", {
      key: tenant.managementKey,
      body: { domain: domainOf(tenant, "x"), tenant_id: "other" },
    });
    expect(expectProblem(extra, 400).detail).toMatch(/unknown field: tenant_id/);
    expectProblem(await call("PUT", "/apple-pay/domain-registration", { key: tenant.managementKey, body: {} }), 400);
    expect(await receivedFor(tenant)).toEqual([]);
  });
});

describe("another tenant's domains", () => {
  let owner: Tenant;
  let intruder: Tenant;
  let domain: string;
  beforeAll(async () => {
    owner = await seedTenant();
    intruder = await seedTenant();
    domain = await registered(owner, "owned");
  });

  it("are not listed to it", async () => {
    expect(await domainsOf(intruder)).toEqual([]);
  });

  it("cannot be registered by it (409, whose it is unsaid), alone or in a list, and Apple is not asked", async () => {
    const one = await call("POST", "/apple-pay/domain-registration", { key: intruder.managementKey, body: { domain } });
    const problem = expectProblem(one, 409);
    expect(problem.detail).not.toContain(owner.tenantId);
    const list = await call("PUT", "/apple-pay/domain-registration", {
      key: intruder.managementKey,
      body: { domains: [domainOf(intruder, "mine"), domain] },
    });
    expectProblem(list, 409);
    expect(await receivedFor(intruder)).toEqual([]);
    expect(await domainsOf(intruder)).toEqual([]);
  });

  it("cannot be deregistered by it: a 404 as for a domain nobody holds, and the owner keeps it", async () => {
    const reply = await call("POST", "/apple-pay/domain-deregistration", { key: intruder.managementKey, body: { domain } });
    const unknown = await call("POST", "/apple-pay/domain-deregistration", {
      key: intruder.managementKey,
      body: { domain: domainOf(intruder, "nobody") },
    });
    expect(expectProblem(reply, 404).detail.replace(domain, "D")).toBe(
      expectProblem(unknown, 404).detail.replace(domainOf(intruder, "nobody"), "D"),
    );
    expect(await receivedFor(intruder)).toEqual([]);
    expect(await domainsOf(owner)).toEqual([domain]);
  });

  it("get it no merchant session: the same 400 as an unregistered domain, and Apple is not asked", async () => {
    const reply = await call("POST", "/apple-pay/session", {
      key: await sessionKeyOf(intruder),
      body: { display_name: "Intruder", domain },
    });
    expect(expectProblem(reply, 400).errors).toEqual({
      domain: ["is not one of the tenant's Apple Pay domains (POST /apple-pay/domain-registration)"],
    });
    expect(await receivedFor(intruder)).toEqual([]);
  });
});

describe("merchant sessions", () => {
  let tenant: Tenant;
  let domain: string;
  beforeAll(async () => {
    tenant = await seedTenant();
    domain = await registered(tenant, "checkout");
  });

  it("requests the session from the validation URL with the vault's identity and answers Apple's object as it came", async () => {
    const validationUrl = "https://apple-pay-gateway-nc-pod3.apple.com/paymentservices/startSession";
    const reply = await call("POST", "/apple-pay/session", {
      key: await sessionKeyOf(tenant),
      body: { validation_url: validationUrl, display_name: "My Store", domain: domain.toUpperCase() },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    // Apple's text, unchanged, as a JSON string: the original interface's SDK reads a string.
    expect(reply.body).toEqual(expect.any(String));
    expect(JSON.parse(reply.body)).toMatchObject({
      merchantSessionIdentifier: expect.stringMatching(/^SSH-/),
      merchantIdentifier: tenant.tenantId,
      domainName: domain,
      displayName: "My Store",
      operationalAnalyticsIdentifier: "fake:apple",
      retries: 0,
    });
    expect((await receivedFor(tenant)).at(-1)).toEqual({
      method: "POST",
      url: validationUrl,
      body: { merchantIdentifier: tenant.tenantId, displayName: "My Store", initiative: "web", initiativeContext: domain },
    });
  });

  it("asks Apple's global endpoint when no validation URL is given", async () => {
    const reply = await call("POST", "/apple-pay/session", { key: await sessionKeyOf(tenant), body: { display_name: "Default", domain } });
    expect(reply.status).toBe(200);
    expect((await receivedFor(tenant)).at(-1)!.url).toBe(PAYMENT_SESSION);
  });

  it("sends the vault's certificate nowhere but Apple's gateway hosts: any other validation URL is a 400 and nothing is sent", async () => {
    const before = (await receivedFor(tenant)).length;
    for (const validationUrl of [
      "http://apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "https://evil.example/paymentservices/paymentSession",
      "https://apple-pay-gateway.apple.com.evil.example/paymentservices/paymentSession",
      "https://evil.example/apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "https://user:pass@apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "https://evil.example@apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "https://apple-pay-gateway.apple.com@evil.example/paymentservices/paymentSession",
      "https://evil.example\\@apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "https://apple-pay-gateway.apple.com:8443/paymentservices/paymentSession",
      "https://17.32.194.1/paymentservices/paymentSession",
      "https://[::1]/paymentservices/paymentSession",
      "https://apple-pay-gateway.apple.com/paymentservices/registerMerchant",
      "https://apple-pay-gateway.apple.com/paymentservices/paymentSession/../unregisterMerchant",
      "https://apple-pay-gateway.apple.com/paymentservices/paymentSession?redirect=https://evil.example",
      "https://apple-pay-gateway.apple.com/paymentservices/paymentSession#x",
      "https://fake-apple.test/received",
      "//apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "apple-pay-gateway.apple.com/paymentservices/paymentSession",
      "not a url",
    ]) {
      const reply = await call("POST", "/apple-pay/session", {
        key: await sessionKeyOf(tenant),
        body: { validation_url: validationUrl, display_name: "My Store", domain },
      });
      expect(expectProblem(reply, 400).errors, validationUrl).toHaveProperty("validation_url");
    }
    expect(await receivedFor(tenant)).toHaveLength(before);
  });

  it("accepts every host of Apple's published list, and only those", async () => {
    expect(APPLE_PAY_GATEWAY_HOSTS).toContain("apple-pay-gateway.apple.com");
    expect(APPLE_PAY_GATEWAY_HOSTS).toContain("cn-apple-pay-gateway.apple.com");
    expect(APPLE_PAY_GATEWAY_HOSTS).toContain("apple-pay-gateway-cert.apple.com");
    for (const host of APPLE_PAY_GATEWAY_HOSTS) {
      expect(host).toMatch(/^[a-z0-9-]+\.apple\.com$/);
      const reply = await call("POST", "/apple-pay/session", {
        key: await sessionKeyOf(tenant),
        body: { validation_url: `https://${host}/paymentservices/paymentSession`, display_name: "My Store", domain },
      });
      expect(reply.status, host).toBe(200);
    }
  });

  it("Apple's refusal is a 422 that does not repeat Apple's words; an outage, a redirect, an oversized or non-JSON answer a 502", async () => {
    const key = await sessionKeyOf(tenant);
    const refused = await call("POST", "/apple-pay/session", { key, body: { display_name: "refused", domain } });
    expect(expectProblem(refused, 422).detail).toBe("Apple refused the merchant session request (Apple answered 400)");
    for (const displayName of ["outage", "redirect", "huge", "not-json"]) {
      const before = (await receivedFor(tenant)).length;
      const reply = await expectLoggedError(/Apple Pay's gateway gave no usable answer/, () =>
        call("POST", "/apple-pay/session", { key, body: { display_name: displayName, domain } }),
      );
      expectProblem(reply, 502);
      expect(JSON.stringify(reply.body), displayName).not.toContain(APPLE_SECRET);
      expect(await receivedFor(tenant), displayName).toHaveLength(before + 1);
    }
  });

  it("refuses merchant_registration_id, an overlong display name, a missing domain and unknown members before sending anything", async () => {
    const key = await sessionKeyOf(tenant);
    const before = (await receivedFor(tenant)).length;
    for (const [body, field] of [
      [{ display_name: "My Store", domain, merchant_registration_id: crypto.randomUUID() }, "merchant_registration_id"],
      [{ display_name: "x".repeat(APPLE_PAY_WEB.maxDisplayNameLength + 1), domain }, "display_name"],
      [{ display_name: "My Store" }, "domain"],
      [{ domain }, "display_name"],
      [{ display_name: "My Store", domain: "https://evil.example" }, "domain"],
      [{ display_name: "My Store", domain, merchantIdentifier: "merchant.other" }, ""],
    ] as const) {
      const problem = expectProblem(await call("POST", "/apple-pay/session", { key, body }), 400);
      if (field) expect(problem.errors, field).toHaveProperty(field);
      else expect(problem.detail).toMatch(/unknown field: merchantIdentifier/);
    }
    expect(await receivedFor(tenant)).toHaveLength(before);
  });

  it("needs apple-pay:session, which public and private keys may hold and management keys may not", async () => {
    const creator = await createApplication(tenant, { type: "public", permissions: ["apple-pay:create"] });
    const body = { display_name: "My Store", domain };
    expect(expectProblem(await call("POST", "/apple-pay/session", { key: creator.key, body }), 403).detail).toMatch(/apple-pay:session/);
    expect(expectProblem(await call("POST", "/apple-pay/session", { key: tenant.managementKey, body }), 403).detail).toMatch(
      /apple-pay:session/,
    );
    const server = await createApplication(tenant, { type: "private", permissions: ["apple-pay:session"] });
    expect((await call("POST", "/apple-pay/session", { key: server.key, body })).status).toBe(200);
    const management = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "m", type: "management", permissions: ["apple-pay:session"] },
    });
    expectProblem(management, 400);
  });

  it("a key holding apple-pay:session cannot manage domains", async () => {
    const key = await sessionKeyOf(tenant);
    expectProblem(await call("GET", "/apple-pay/domain-registration", { key }), 403);
    expectProblem(await call("POST", "/apple-pay/domain-deregistration", { key, body: { domain } }), 403);
    expect(await domainsOf(tenant)).toEqual([domain]);
  });
});

describe("a deployment without an Apple Pay gateway", () => {
  it("answers 503 naming the missing binding to every call that needs Apple, and still lists the domains it holds", async () => {
    const tenant = await seedTenant();
    const domain = await registered(tenant, "unbound");
    const unbound = { APPLE_PAY_GATEWAY: undefined };
    const management = { "SVC-API-KEY": tenant.managementKey };
    for (const [method, path, headers, body] of [
      ["POST", "/apple-pay/domain-registration", management, { domain: domainOf(tenant, "more") }],
      ["PUT", "/apple-pay/domain-registration", management, { domains: [] }],
      ["POST", "/apple-pay/domain-deregistration", management, { domain }],
      ["POST", "/apple-pay/session", { "SVC-API-KEY": await sessionKeyOf(tenant) }, { display_name: "My Store", domain }],
    ] as const) {
      const reply = await expectLoggedError(/no Apple Pay gateway configured/, () =>
        callConfigured(unbound, method, path, { headers, body }),
      );
      expect(reply.status, `${method} ${path}`).toBe(503);
      expect(reply.body.detail).toMatch(/no Apple Pay gateway configured \(the APPLE_PAY_GATEWAY mTLS certificate binding\)/);
    }
    const list = await callConfigured(unbound, "GET", "/apple-pay/domain-registration", { headers: management });
    expect(list.body).toEqual({ domains: [{ domain, status: "verified" }] });
    expect(await receivedFor(tenant)).toHaveLength(1);
  });
});
