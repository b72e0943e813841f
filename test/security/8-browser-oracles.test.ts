import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { call, callRoute, createApplication, expectProblem, rowCounts, type Tenant } from "../support/harness";
import { createToken, SSN, seedTokenTenant, VISA } from "../support/tokens";

/*
 * Rule 8 (issue 34): what a browser holds must not read. A public key ships in every shopper's
 * browser and a session key is handed to one; neither may learn a value it did not type through
 * an oracle: a fingerprint to compare against tokenized guesses, a deduplicated answer, or a budget
 * of guesses that many addresses add up to.
 */

/** Every answer a token comes back in must leave its fingerprint out. */
function expectNoFingerprint(token: Record<string, unknown>) {
  expect(token).toHaveProperty("id");
  expect(token).not.toHaveProperty("fingerprint");
}

/** A checkout's public key (create and update, as elements use it) and a merchant server's key that authorizes sessions. */
async function seedCheckout() {
  const tenant = await seedTokenTenant();
  const browser = await createApplication(tenant, { type: "public", permissions: ["token:create", "token:update"] });
  const server = await createApplication(tenant, {
    type: "private",
    rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:read", "token:search", "session:authorize"] }],
  });
  return { tenant, browser, server };
}

/** A session key that the merchant's server authorized to read and search, masked: what a reveal page holds. */
async function sessionKey(browserKey: string, serverKey: string, permissions = ["token:read", "token:search"]): Promise<string> {
  const session = (await callRoute("POST /sessions", 201, { key: browserKey })).body;
  const authorized = await call("POST", "/sessions/authorize", { key: serverKey, body: { nonce: session.nonce, permissions } });
  expect(authorized.status, authorized.text).toBe(200);
  return session.session_key;
}

describe("rule 8: no fingerprint for what a browser holds", () => {
  it("a public key sees no fingerprint when it creates, tokenizes or updates", async () => {
    const { browser } = await seedCheckout();
    const created = await call("POST", "/tokens", { key: browser.key, body: { type: "card_number", data: VISA } });
    expect(created.status, created.text).toBe(201);
    expectNoFingerprint(created.body);

    const tokenized = await call("POST", "/tokenize", {
      key: browser.key,
      body: { card: { type: "card_number", data: "5555555555554444" }, ssn: { type: "social_security_number", data: SSN } },
    });
    expect(tokenized.status, tokenized.text).toBe(201);
    expectNoFingerprint(tokenized.body.card);
    expectNoFingerprint(tokenized.body.ssn);

    // The attack's starting point: an empty patch of the public key's own token answered its fingerprint.
    const patched = await call("PATCH", `/tokens/${created.body.id}`, {
      key: browser.key,
      body: {},
      contentType: "application/merge-patch+json",
    });
    expect(patched.status, patched.text).toBe(200);
    expectNoFingerprint(patched.body);
  });

  it("a session key sees no fingerprint when it reads, lists or searches", async () => {
    const { tenant, browser, server } = await seedCheckout();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const key = await sessionKey(browser.key, server.key);

    const read = await call("GET", `/tokens/${token.id}`, { key });
    expect(read.status, read.text).toBe(200);
    expectNoFingerprint(read.body);
    const listed = await call("GET", "/tokens", { key });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.length).toBeGreaterThan(0);
    for (const item of listed.body.data) expectNoFingerprint(item);
    const found = await call("POST", "/tokens/search", { key, body: { query: `id:${token.id}` } });
    expect(found.status, found.text).toBe(200);
    expect(found.body.data).toHaveLength(1);
    expectNoFingerprint(found.body.data[0]);
  });

  it("a redact rule shows no fingerprint to anyone, a private key's mask or reveal rule still does", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN, containers: ["/pii/"] });
    const redacting = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "redact", permissions: ["token:read", "token:search"] }],
    });
    const read = await call("GET", `/tokens/${token.id}`, { key: redacting.key });
    expect(read.status, read.text).toBe(200);
    expectNoFingerprint(read.body);
    expect(read.body).not.toHaveProperty("data");
    for (const item of (await call("GET", "/tokens", { key: redacting.key })).body.data) expectNoFingerprint(item);
    for (const item of (await call("POST", "/tokens/search", { key: redacting.key, body: { query: "type:social_security_number" } })).body
      .data) {
      expectNoFingerprint(item);
    }

    // The deduplication use case: a private key whose rule masks or reveals compares fingerprints (docs/security.md says so).
    const masking = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect((await call("GET", `/tokens/${token.id}`, { key: masking.key })).body.fingerprint).toBe(token.fingerprint);
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.fingerprint).toBe(token.fingerprint);
  });
});

describe("rule 8: deduplication tells a browser's key nothing", () => {
  it("a public key's deduplicate_token is refused with a 400 and writes nothing, in POST /tokens and in a tokenize", async () => {
    const { tenant, browser } = await seedCheckout();
    await createToken(tenant.key, { type: "card_number", data: VISA });
    const before = await rowCounts();
    const guess = { type: "card_number", data: VISA, deduplicate_token: true };
    const single = expectProblem(await call("POST", "/tokens", { key: browser.key, body: guess }), 400);
    expect(single.errors).toHaveProperty("deduplicate_token");
    const batch = expectProblem(await call("POST", "/tokenize", { key: browser.key, body: { first: guess } }), 400);
    expect(JSON.stringify(batch.errors)).toContain("deduplicate_token");
    expect((await rowCounts()).tokens).toBe(before.tokens);
  });

  it("a public key's update with deduplicate_token is refused, and a session key's create with it too", async () => {
    const { tenant, browser } = await seedCheckout();
    await createToken(tenant.key, { type: "card_number", data: VISA });
    const own = await call("POST", "/tokens", { key: browser.key, body: { type: "card_number", data: "5555555555554444" } });
    const patched = await call("PATCH", `/tokens/${own.body.id}`, {
      key: browser.key,
      body: { data: VISA, deduplicate_token: true },
      contentType: "application/merge-patch+json",
    });
    expectProblem(patched, 400);
    const creator = await createApplication(tenant, {
      type: "private",
      permissions: ["token:create", "session:authorize"],
    });
    const key = await sessionKey(browser.key, creator.key, ["token:create"]);
    const created = await call("POST", "/tokens", { key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    expectProblem(created, 400);
  });
});

describe("rule 8: every token a request creates is counted", () => {
  /** Wrangler.toml's limits for a key in place of the suite's raised ones, and a key limit of 5 standing in for 10,000. */
  const withLowKeyLimit = () => ({ KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT });

  async function tokenizeFrom(limits: Record<string, unknown>, key: string, values: number, address = "192.0.2.1") {
    const body = Object.fromEntries(Array.from({ length: values }, (_, i) => [`v${i}`, `value-${i}`]));
    return callConfigured(limits, "POST", "/tokenize", { headers: { "SVC-API-KEY": key, "CF-Connecting-IP": address }, body });
  }

  it("a private key's tokenize of six values counts six against a limit of five: a 429, and nothing written", async () => {
    const tenant: Tenant & { key: string } = await seedTokenTenant();
    const before = await rowCounts();
    const reply = await tokenizeFrom(withLowKeyLimit(), tenant.key, 6);
    expect(reply.status, reply.text).toBe(429);
    expect((await rowCounts()).tokens).toBe(before.tokens);
  });

  it("a public key's own limit is far below a private key's: many addresses of one /48 add up to it", async () => {
    const { browser } = await seedCheckout();
    const limits = {
      PUBLIC_KEY_RATE_LIMIT: env.DEFAULT_PUBLIC_KEY_RATE_LIMIT,
      PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT,
    };
    // 50 guesses from each /64 of 2001:db8:7::/48, each within its address's own limit of 60 a minute, until the
    // key's limit (1,000 a minute) answers. A window may end once while this runs: at most two windows' worth pass.
    let served = 0;
    for (let subnet = 0; subnet < 45; subnet++) {
      const reply = await tokenizeFrom(limits, browser.key, 50, `2001:db8:7:${subnet.toString(16)}::1`);
      if (reply.status === 429) break;
      expect(reply.status, reply.text).toBe(201);
      served += 50;
    }
    expect(served).toBeGreaterThanOrEqual(100);
    expect(served).toBeLessThanOrEqual(2_000);
  }, 120_000);
});

describe("rule 8 (after an attack on it): what else a browser's key could read", () => {
  it("one address refused by its own limit spends nothing of the key's: other shoppers are still served", async () => {
    const { browser } = await seedCheckout();
    const limits = { PUBLIC_KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT, PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT };
    const from = (address: string) =>
      callConfigured(limits, "POST", "/tokens", {
        headers: { "SVC-API-KEY": browser.key, "CF-Connecting-IP": address },
        body: { type: "token", data: "x" },
      });
    // A tokenize of 61 from one address is over its limit of 60 a minute: refused, it must not use up the key's 5.
    const flood = await callConfigured(limits, "POST", "/tokenize", {
      headers: { "SVC-API-KEY": browser.key, "CF-Connecting-IP": "198.51.100.66" },
      body: Array.from({ length: 61 }, (_, i) => `v${i}`),
    });
    expect(flood.status).toBe(429);
    expect((await from("198.51.100.67")).status).toBe(201);
  });

  it("a public key's create and tokenize answers show no data, masked or not: a typed value put in a member that a mask shows whole stays hidden", async () => {
    const { browser } = await seedCheckout();
    // What page script did with a typed SSN: the bank type's mask shows the routing number whole.
    const created = await call("POST", "/tokens", {
      key: browser.key,
      body: { type: "bank", data: { routing_number: "123456780", account_number: "0000" } },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).not.toHaveProperty("data");
    const tokenized = await call("POST", "/tokenize", {
      key: browser.key,
      body: { bank: { type: "bank", data: { routing_number: "123456780", account_number: "0000" } } },
    });
    expect(tokenized.status, tokenized.text).toBe(201);
    expect(tokenized.body.bank).not.toHaveProperty("data");
  });

  it("a browser's key may not choose a token id: taken or not would tell which ids exist, and it could claim the merchant's", async () => {
    const { tenant, browser } = await seedCheckout();
    await createToken(tenant.key, { type: "social_security_number", data: SSN, id: "cust-42-ssn" });
    const before = await rowCounts();
    for (const id of ["cust-42-ssn", "cust-43-ssn"]) {
      const problem = expectProblem(await call("POST", "/tokens", { key: browser.key, body: { type: "token", data: "x", id } }), 400);
      expect(problem.errors).toHaveProperty("id");
    }
    expectProblem(await call("POST", "/tokenize", { key: browser.key, body: [{ type: "token", data: "x", id: "cust-44-ssn" }] }), 400);
    expect((await rowCounts()).tokens).toBe(before.tokens);
  });

  it("a session key reading a token it may not read gets the 404 of an unknown id", async () => {
    const { tenant, browser } = await seedCheckout();
    const creator = await createApplication(tenant, { type: "private", permissions: ["token:read", "session:authorize"] });
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const session = (await callRoute("POST /sessions", 201, { key: browser.key })).body;
    const rules = [
      {
        priority: 1,
        conditions: [{ attribute: "id", operator: "equals", value: crypto.randomUUID() }],
        transform: "mask",
        permissions: ["token:read"],
      },
    ];
    expect((await call("POST", "/sessions/authorize", { key: creator.key, body: { nonce: session.nonce, rules } })).status).toBe(200);
    const existing = expectProblem(await call("GET", `/tokens/${token.id}`, { key: session.session_key }), 404);
    const unknown = expectProblem(await call("GET", `/tokens/${crypto.randomUUID()}`, { key: session.session_key }), 404);
    expect(existing.title).toBe(unknown.title);
  });
});

describe("rule 8 (after a second attack on it): a browser's key plants nothing and learns nothing of other tokens", () => {
  it("a public key takes the type's expressions: a literal fingerprint or search index that would pass its token off as another's is refused", async () => {
    const { tenant, browser } = await seedCheckout();
    const before = await rowCounts();
    const planted = { routing_number: "011000015", account_number: "999999999" };
    for (const member of [
      { fingerprint_expression: "000123456789|110000000" },
      { search_indexes: ["123-45-6789"] },
      { mask: "{{ data }}" },
    ]) {
      const reply = await call("POST", "/tokens", { key: browser.key, body: { type: "bank", data: planted, ...member } });
      expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toEqual(Object.keys(member));
    }
    expect((await rowCounts()).tokens).toBe(before.tokens);
    // Its own token cannot get them later either.
    const own = await call("POST", "/tokens", { key: browser.key, body: { type: "bank", data: planted } });
    const patched = await call("PATCH", `/tokens/${own.body.id}`, {
      key: browser.key,
      body: { data: planted, fingerprint_expression: "000123456789|110000000" },
      contentType: "application/merge-patch+json",
    });
    expect(Object.keys(expectProblem(patched, 400).errors ?? {})).toEqual(["fingerprint_expression"]);
    // The server's deduplicated create of the seller's account is its own token, not the attacker's.
    const server = await call("POST", "/tokens", {
      key: tenant.key,
      body: { type: "bank", data: { routing_number: "110000000", account_number: "000123456789" }, deduplicate_token: true },
    });
    expect(server.status, server.text).toBe(201);
  });

  it("a session key that may not touch a token is answered as if it did not exist: update, delete and detokenize", async () => {
    const { tenant, browser } = await seedCheckout();
    const authorizer = await createApplication(tenant, {
      type: "private",
      permissions: ["token:read", "token:update", "token:delete", "token:use", "session:authorize"],
    });
    const named = await createToken(tenant.key, { type: "token", data: "named" });
    const other = await createToken(tenant.key, { type: "token", data: "other" });
    const session = (await callRoute("POST /sessions", 201, { key: browser.key })).body;
    const rules = [
      {
        priority: 1,
        conditions: [{ attribute: "id", operator: "equals", value: named.id }],
        transform: "mask",
        permissions: ["token:read", "token:update", "token:delete", "token:use"],
      },
    ];
    expect((await call("POST", "/sessions/authorize", { key: authorizer.key, body: { nonce: session.nonce, rules } })).status).toBe(200);
    const key = session.session_key;
    const unknown = crypto.randomUUID();
    const patch = (id: string) =>
      call("PATCH", `/tokens/${id}`, { key, body: { metadata: { a: "b" } }, contentType: "application/merge-patch+json" });
    const answers = async (id: string) => {
      const replies = [
        await patch(id),
        await call("DELETE", `/tokens/${id}`, { key }),
        await call("POST", "/detokenize", { key, body: { value: `{{ ${id} }}` } }),
      ];
      return replies.map((reply) => `${reply.status} ${String(reply.body?.detail).replace(id, "<id>")}`);
    };
    expect(await answers(other.id)).toEqual(await answers(unknown));
  });

  it("a session key is counted as a browser's: 60 a minute from one address", async () => {
    const { tenant, browser } = await seedCheckout();
    const authorizer = await createApplication(tenant, { type: "private", permissions: ["token:read", "session:authorize"] });
    const session = (await callRoute("POST /sessions", 201, { key: browser.key })).body;
    const body = { nonce: session.nonce, permissions: ["token:read"] };
    expect((await call("POST", "/sessions/authorize", { key: authorizer.key, body })).status).toBe(200);
    const limits = { PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT };
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) {
      const reply = await callConfigured(limits, "GET", `/tokens/${crypto.randomUUID()}`, {
        headers: { "SVC-API-KEY": session.session_key, "CF-Connecting-IP": "198.51.100.88" },
      });
      statuses.push(reply.status);
    }
    expect(statuses).toContain(429);
  }, 60_000);

  it("a client behind Pseudo IPv4 is counted by its real IPv6 /64, and an IPv6 address with a dotted tail is not an IPv4 one", async () => {
    const { browser } = await seedCheckout();
    const limits = { PUBLIC_CLIENT_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT };
    const from = (headers: Record<string, string>) =>
      callConfigured(limits, "POST", "/tokens", {
        headers: { "SVC-API-KEY": browser.key, ...headers },
        body: { type: "token", data: "x" },
      });
    // Five pseudo IPv4 addresses of one /64 share its count.
    for (let i = 0; i < 5; i++) {
      expect((await from({ "CF-Connecting-IP": `240.0.0.${i}`, "CF-Connecting-IPv6": `2001:db8:9:9::${i}` })).status).toBe(201);
    }
    expect((await from({ "CF-Connecting-IP": "240.0.0.99", "CF-Connecting-IPv6": "2001:db8:9:9::99" })).status).toBe(429);
    // An address of another /64 written with a dotted tail does not count against 10.77.80.9.
    for (let i = 0; i < 5; i++) expect((await from({ "CF-Connecting-IP": "10.77.80.9" })).status).toBe(201);
    expect((await from({ "CF-Connecting-IP": "2001:db8:dead:beef::10.77.80.9" })).status).toBe(201);
  });
});
