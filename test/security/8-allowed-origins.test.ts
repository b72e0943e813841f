import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { FRAME_POLICY } from "../../src/elements/frame";
import { BASE, call, createApplication, expectProblem, seedTenant } from "../support/harness";

/*
 * A public application's allowed_origins (issue 27, step 4): the browser pages its key answers.
 * A request that carries `Origin` (a browser's) from a page of another origin than those listed and
 * the vault's own is refused; a request without `Origin` (a server's) is not a browser's and passes.
 */

const SHOP = "https://shop.example.com";
const ELSEWHERE = "https://attacker.example";
const CARD = { type: "card", data: { number: "4242424242424242", expiration_month: 12, expiration_year: 2099 } };

async function publicKeyFor(allowedOrigins: string[]) {
  const tenant = await seedTenant();
  const application = await createApplication(tenant, { type: "public", permissions: ["token:create"], allowed_origins: allowedOrigins });
  return { tenant, ...application };
}

describe("allowed_origins: the field", () => {
  it("is kept on create, shown by get and list, and replaced by update", async () => {
    const { tenant, id } = await publicKeyFor([SHOP, "http://localhost:8080"]);
    const read = await call("GET", `/applications/${id}`, { key: tenant.managementKey });
    expect(read.body.allowed_origins).toEqual([SHOP, "http://localhost:8080"]);
    const listed = await call("GET", `/applications?id=${id}`, { key: tenant.managementKey });
    expect(listed.body.data[0].allowed_origins).toEqual([SHOP, "http://localhost:8080"]);

    const updated = await call("PUT", `/applications/${id}`, {
      key: tenant.managementKey,
      body: { name: "checkout", permissions: ["token:create"], allowed_origins: ["https://127.0.0.1:8443"] },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.allowed_origins).toEqual(["https://127.0.0.1:8443"]);
    const cleared = await call("PUT", `/applications/${id}`, {
      key: tenant.managementKey,
      body: { name: "checkout", permissions: ["token:create"] },
    });
    expect(cleared.body.allowed_origins).toEqual([]);
  });

  it("defaults to none, for every type", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "p", type: "private", permissions: ["token:read"] },
    });
    expect(reply.body.allowed_origins).toEqual([]);
  });

  it.each([
    ["a path", "https://shop.example.com/checkout"],
    ["a trailing slash", "https://shop.example.com/"],
    ["a wildcard", "https://*.example.com"],
    ["no scheme", "shop.example.com"],
    ["another scheme", "ftp://shop.example.com"],
    ["an upper-case host", "https://Shop.example.com"],
    ["the scheme's default port", "https://shop.example.com:443"],
    ["credentials", "https://user@shop.example.com"],
    ["a query", "https://shop.example.com?x=1"],
    ["a character that would end a CSP source", "https://shop.example.com;script-src"],
    ["a space", "https://shop.example.com https://attacker.example"],
    ["the opaque origin", "null"],
    ["an over-long origin", `https://${"a".repeat(300)}.example`],
  ])("refuses an origin with %s", async (_, origin) => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "p", type: "public", permissions: ["token:create"], allowed_origins: [origin] },
    });
    expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toEqual(["allowed_origins[0]"]);
  });

  it("refuses an IPv6 literal, which a CSP frame-ancestors source cannot name, with a 400 that says so", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "p", type: "public", permissions: ["token:create"], allowed_origins: ["https://[::1]:8443"] },
    });
    expect(expectProblem(reply, 400).errors?.["allowed_origins[0]"]?.join()).toContain("IPv6");
  });

  it("refuses an origin listed twice, and more than 20", async () => {
    const tenant = await seedTenant();
    for (const origins of [[SHOP, SHOP], Array.from({ length: 21 }, (_, i) => `https://shop${i}.example.com`)]) {
      const reply = await call("POST", "/applications", {
        key: tenant.managementKey,
        body: { name: "p", type: "public", permissions: ["token:create"], allowed_origins: origins },
      });
      expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toEqual(["allowed_origins"]);
    }
  });

  it.each(["private", "management"])("is refused on a %s application, whose key must never reach a browser", async (type) => {
    const tenant = await seedTenant();
    const permissions = type === "private" ? ["token:read"] : ["application:read"];
    const created = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "p", type, permissions, allowed_origins: [SHOP] },
    });
    expect(expectProblem(created, 400).errors).toEqual({
      allowed_origins: [expect.stringContaining(`a ${type} key must never reach a browser`)],
    });
    const existing = await createApplication(tenant, { type: type as "private", permissions });
    const updated = await call("PUT", `/applications/${existing.id}`, {
      key: tenant.managementKey,
      body: { name: "p", permissions, allowed_origins: [SHOP] },
    });
    expectProblem(updated, 400);
  });
});

describe("allowed_origins: the Origin rule", () => {
  it("refuses a browser request from an origin not listed, for tokens and tokenize (403)", async () => {
    const { key } = await publicKeyFor([SHOP]);
    const created = await call("POST", "/tokens", { key, body: CARD, headers: { origin: ELSEWHERE } });
    expect(expectProblem(created, 403).detail).toContain("allowed_origins");
    const tokenized = await call("POST", "/tokenize", { key, body: { card: CARD }, headers: { origin: ELSEWHERE } });
    expectProblem(tokenized, 403);
    const own = await call("GET", "/applications/key", { key, headers: { origin: ELSEWHERE } });
    expectProblem(own, 403);
  });

  it("refuses POST /sessions from an origin not listed, and answers it from a listed one", async () => {
    const { key } = await publicKeyFor([SHOP]);
    expectProblem(await call("POST", "/sessions", { key, headers: { origin: ELSEWHERE } }), 403);
    expect((await call("POST", "/sessions", { key, headers: { origin: SHOP } })).status).toBe(201);
  });

  it("answers the listed origins, the vault's own (its frames) and servers (no Origin)", async () => {
    const { key } = await publicKeyFor([SHOP]);
    for (const headers of [{ origin: SHOP }, { origin: new URL(BASE).origin }, {}] as Record<string, string>[]) {
      const created = await call("POST", "/tokens", { key, body: CARD, headers });
      expect(created.status, JSON.stringify(headers)).toBe(201);
    }
  });

  it("matches origins exactly: another port, scheme or sub-domain is another origin", async () => {
    const { key } = await publicKeyFor([SHOP]);
    for (const origin of ["https://shop.example.com:8443", "http://shop.example.com", "https://www.shop.example.com", "null"]) {
      expectProblem(await call("POST", "/tokens", { key, body: CARD, headers: { origin } }), 403);
    }
  });

  it("leaves a public key without allowed_origins usable from any page", async () => {
    const { key } = await publicKeyFor([]);
    expect((await call("POST", "/tokens", { key, body: CARD, headers: { origin: ELSEWHERE } })).status).toBe(201);
  });
});

/** The frame page as a browser asks for it: the query elements.js writes. */
function framePage(query: Record<string, string>) {
  const parameters = new URLSearchParams({ kind: "card", element: "e1", channel: "c1", origin: SHOP, ...query });
  return SELF.fetch(`${BASE}/elements/v1/frame?${parameters}`);
}

describe("allowed_origins: the frame page", () => {
  it("carries frame-ancestors with the vault's own pages and the listed origins", async () => {
    const { key } = await publicKeyFor([SHOP, "http://localhost:8080"]);
    const page = await framePage({ key });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(`${FRAME_POLICY}; frame-ancestors 'self' ${SHOP} http://localhost:8080`);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("referrer-policy")).toBe("same-origin");
    expect(await page.text()).toContain('<meta name="header-prefix" content="SVC" />');
  });

  it("carries the frame's policy without frame-ancestors for a public key that lists no origins", async () => {
    const { key } = await publicKeyFor([]);
    const page = await framePage({ key, origin: ELSEWHERE });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toBe(FRAME_POLICY);
    await page.text();
  });

  it("refuses a page origin the key does not list, as a page no one may frame", async () => {
    const { key } = await publicKeyFor([SHOP]);
    const page = await framePage({ key, origin: ELSEWHERE });
    expect(page.status).toBe(403);
    expect(page.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(((await page.json()) as { detail: string }).detail).toContain("allowed_origins");
  });

  it("answers an unknown, revoked, expired, private or management key, or none, alike: 401, framed by no page", async () => {
    const tenant = await seedTenant();
    const revoked = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    await call("DELETE", `/applications/${revoked.id}`, { key: tenant.managementKey });
    const privateKey = (await createApplication(tenant, { type: "private", permissions: ["token:read"] })).key;
    const expiring = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const expired = await call("POST", `/applications/${expiring.id}/keys`, {
      key: tenant.managementKey,
      body: { expires_at: new Date(Date.now() + 1_000).toISOString() },
    });
    expect(expired.status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const keys: Record<string, string>[] = [
      { key: "key_unknown" },
      { key: revoked.key },
      { key: expired.body.key },
      { key: privateKey },
      { key: tenant.managementKey },
      {},
    ];
    const answers = [];
    for (const query of keys) {
      const page = await framePage(query);
      answers.push({ status: page.status, policy: page.headers.get("content-security-policy"), body: await page.json() });
    }
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    expect(answers[0]).toMatchObject({ status: 401, policy: "default-src 'none'; frame-ancestors 'none'" });
  });
});
