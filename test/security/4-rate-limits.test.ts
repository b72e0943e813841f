import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../src/app";
import { callConfigured } from "../support/configured";
import { expectDocumentedReply } from "../support/documented-replies";
import { call, callRoute, createApplication, expectProblem, type Reply, rowCounts, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, loopback } from "../support/proxies";
import { jsonOf } from "../support/reply.mjs";
import { withMethod } from "../support/substitute";
import { seedTokenTenant } from "../support/tokens";

/*
 * Rule 4 of issue 25: every request authenticated by a key is counted against it, by Cloudflare's
 * Workers Rate Limiting bindings. The suite runs with those limits raised (vitest.config.ts); these
 * tests hand the worker real low-limit bindings in their place: wrangler.toml's own public limit
 * (60 a minute per key and client address) and a key limit of 5 every 10 s standing in for 10,000.
 */

const PUBLIC_LIMIT = 60;
const LOW_KEY_LIMIT = 5;
const withDefaultPublicLimit = () => ({ PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT });
const withLowKeyLimit = () => ({ KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT });

interface LimitedCall {
  limits: Record<string, unknown>;
  key?: string;
  proxyKey?: string;
  address?: string;
  body?: unknown;
}

/** One request to the worker with the low limits in place of the suite's; an API reply must be the documented one. */
async function send(method: string, path: string, { limits, key, proxyKey, address, body }: LimitedCall): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (key) headers["SVC-API-KEY"] = key;
  if (proxyKey) headers["SVC-PROXY-KEY"] = proxyKey;
  if (address) headers["CF-Connecting-IP"] = address;
  // As an HTTP client sends it: the routes that require a body look for its length.
  if (body !== undefined) headers["content-length"] = String(new TextEncoder().encode(JSON.stringify(body)).length);
  const reply = await callConfigured(limits, method, path, { headers, body });
  // A destination's answer to /proxy is its own, no part of the document.
  if (!path.startsWith("/proxy")) expectDocumentedReply(method, path, reply);
  return reply;
}

/**
 * A rate limit counts in fixed windows of its period: when the current one ends within `needMs`,
 * wait for the next, so that a test's requests all fall in one window.
 */
async function withinOneWindow(periodSeconds: number, needMs: number): Promise<void> {
  const left = periodSeconds * 1000 - (Date.now() % (periodSeconds * 1000));
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 100));
}

function expectRateLimited(reply: Reply, retryAfterSeconds: number) {
  const problem = expectProblem(reply, 429);
  expect(reply.headers.get("retry-after")).toBe(String(retryAfterSeconds));
  expect(problem.title).toBe("Too Many Requests");
  return problem;
}

/** A public application that may create tokens, as a browser would hold it. */
async function publicKey() {
  const tenant = await seedTenant();
  return { tenant, ...(await createApplication(tenant, { type: "public", permissions: ["token:create"] })) };
}

const ssn = (n: number) => ({ type: "social_security_number", data: `321-54-${String(n).padStart(4, "0")}` });

describe("rule 4: rate limits per key, counted by the Workers Rate Limiting binding", () => {
  it("a public key over its limit from one address is a 429 with Retry-After, and its 61st create writes nothing", async () => {
    const { key } = await publicKey();
    await withinOneWindow(60, 15_000);
    const limits = withDefaultPublicLimit();
    const address = "203.0.113.7";
    for (let i = 0; i < PUBLIC_LIMIT; i++) {
      const reply = await send("POST", "/tokens", { limits, key, address, body: ssn(i % 3) });
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    }
    const before = await rowCounts();
    const refused = await send("POST", "/tokens", { limits, key, address, body: ssn(1234) });
    const problem = expectRateLimited(refused, 60);
    expect(problem.detail).toContain("public key");
    expect(await rowCounts()).toEqual(before);
  }, 60_000);

  it("a tokenize by a public key counts each create: 61 at once are refused, and nothing is written", async () => {
    const { key } = await publicKey();
    await withinOneWindow(60, 5_000);
    const limits = withDefaultPublicLimit();
    const before = await rowCounts();
    const guesses = Array.from({ length: PUBLIC_LIMIT + 1 }, (_, i) => ssn(i));
    expectRateLimited(await send("POST", "/tokenize", { limits, key, address: "203.0.113.8", body: guesses }), 60);
    expect(await rowCounts()).toEqual(before);

    const fewer = await send("POST", "/tokenize", { limits, key, address: "203.0.113.9", body: guesses.slice(0, 3) });
    expect(fewer.status, JSON.stringify(fewer.body)).toBe(201);
  }, 30_000);

  it("a public key's tokenize whose body is not JSON is still a 400, not a 500", async () => {
    const { key } = await publicKey();
    const reply = await call("POST", "/tokenize", { key, raw: '[{"type": "token", "data": 1, "deduplicate_token": true},' });
    expect(expectProblem(reply, 400).detail).toMatch(/JSON/);
  });

  it("the creates of a tokenize and of POST /tokens share one count", async () => {
    const { key } = await publicKey();
    await withinOneWindow(60, 15_000);
    const limits = withDefaultPublicLimit();
    const address = "203.0.113.10";
    const tokenized = await send("POST", "/tokenize", { limits, key, address, body: Array.from({ length: 50 }, (_, i) => ssn(i)) });
    expect(tokenized.status, JSON.stringify(tokenized.body)).toBe(201);
    for (let i = 0; i < PUBLIC_LIMIT - 50; i++) {
      expect((await send("POST", "/tokens", { limits, key, address, body: ssn(i) })).status).toBe(201);
    }
    expectRateLimited(await send("POST", "/tokens", { limits, key, address, body: ssn(0) }), 60);
  }, 60_000);

  it("a public key is counted per client address: another address is still served", async () => {
    const { key } = await publicKey();
    await withinOneWindow(60, 15_000);
    const limits = withDefaultPublicLimit();
    for (let i = 0; i < PUBLIC_LIMIT; i++) await send("POST", "/tokens", { limits, key, address: "198.51.100.1", body: ssn(7) });
    expectRateLimited(await send("POST", "/tokens", { limits, key, address: "198.51.100.1", body: ssn(7) }), 60);
    expect((await send("POST", "/tokens", { limits, key, address: "198.51.100.2", body: ssn(7) })).status).toBe(201);
  }, 60_000);

  it("an IPv6 client counts as its /64: another address of it is refused, another /64 is served", async () => {
    const { key } = await publicKey();
    await withinOneWindow(60, 15_000);
    const limits = withDefaultPublicLimit();
    for (let i = 0; i < PUBLIC_LIMIT; i++) {
      await send("POST", "/tokens", { limits, key, address: `2001:db8:0:1::${i.toString(16)}`, body: ssn(8) });
    }
    expectRateLimited(await send("POST", "/tokens", { limits, key, address: "2001:0db8:0000:0001:ffff::1", body: ssn(8) }), 60);
    expect((await send("POST", "/tokens", { limits, key, address: "2001:db8:0:2::1", body: ssn(8) })).status).toBe(201);
  }, 60_000);

  it("a private key is counted per key, whatever the client address", async () => {
    const tenant = await seedTokenTenant();
    await withinOneWindow(10, 3_000);
    const limits = withLowKeyLimit();
    for (let i = 0; i < LOW_KEY_LIMIT; i++) {
      expect((await send("GET", "/tokens", { limits, key: tenant.key, address: `192.0.2.${i}` })).status).toBe(200);
    }
    const problem = expectRateLimited(await send("GET", "/tokens", { limits, key: tenant.key, address: "192.0.2.99" }), 10);
    expect(problem.detail).toContain("API key");
    const other = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect((await send("GET", "/tokens", { limits, key: other.key, address: "192.0.2.99" })).status).toBe(200);
  }, 30_000);

  it("a public key is counted per key too, across client addresses, by a limit of its own", async () => {
    const { key } = await publicKey();
    await withinOneWindow(10, 3_000);
    // The key limit of 5 every 10 s stands in for the public key's own (1,000 a minute).
    const limits = { PUBLIC_KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT };
    for (let i = 0; i < LOW_KEY_LIMIT; i++) {
      expect((await send("POST", "/tokens", { limits, key, address: `192.0.2.${i}`, body: ssn(9) })).status).toBe(201);
    }
    const problem = expectRateLimited(await send("POST", "/tokens", { limits, key, address: "192.0.2.99", body: ssn(9) }), 60);
    expect(problem.detail).toBe("This public key has made too many requests; retry in 60 s");
  }, 30_000);

  it("counts a key by its id, never by its secret", async () => {
    const tenant = await seedTenant();
    const created = await callRoute("POST /applications", 201, {
      key: tenant.managementKey,
      body: { name: "reader", type: "private", permissions: ["token:read"] },
    });
    const counted: string[] = [];
    const recording = withMethod(env.KEY_RATE_LIMIT, "limit", (options) => {
      counted.push(options.key);
      return env.KEY_RATE_LIMIT.limit(options);
    });
    expect((await send("GET", "/tokens", { limits: { KEY_RATE_LIMIT: recording }, key: created.body.key })).status).toBe(200);
    expect(counted).toHaveLength(1);
    expect(counted[0]).not.toContain(created.body.key);
    expect(counted[0]).toContain(created.body.keys[0]!.id);
  });

  it("an anonymous proxy call is counted per proxy key and client address; over the limit it is a proxy_error with Retry-After", async () => {
    const proxy = await createProxy(await seedTenant(), { require_auth: false, destination_url: loopback("/anonymous-limit-marker") });
    await withinOneWindow(10, 3_000);
    const limits = withLowKeyLimit();
    for (let i = 0; i < LOW_KEY_LIMIT; i++) {
      expect((await send("POST", "/proxy", { limits, proxyKey: proxy.key, address: "198.51.100.20", body: {} })).status).toBe(200);
    }
    const refused = await send("POST", "/proxy", { limits, proxyKey: proxy.key, address: "198.51.100.20", body: {} });
    expect(refused.status).toBe(429);
    expectDocumentedReply("POST", "/proxy", refused);
    expect(refused.headers.get("retry-after")).toBe("10");
    expect(Object.keys(jsonOf(refused.text))).toEqual(["proxy_error"]);
    expect(refused.body.proxy_error).toMatchObject({ status: 429, title: "Too Many Requests" });
    expect(await destinationSaw("anonymous-limit-marker")).toBe(LOW_KEY_LIMIT);

    expect((await send("POST", "/proxy", { limits, proxyKey: proxy.key, address: "198.51.100.21", body: {} })).status).toBe(200);
  }, 30_000);

  it("a proxy call authenticated by an API key counts against that key, with its API requests", async () => {
    const tenant = await seedTokenTenant();
    const proxy = await createProxy(tenant, { destination_url: loopback("/authenticated-limit-marker") });
    await withinOneWindow(10, 3_000);
    const limits = withLowKeyLimit();
    for (let i = 0; i < LOW_KEY_LIMIT; i++) expect((await send("GET", "/tokens", { limits, key: tenant.key })).status).toBe(200);
    const refused = await send("POST", "/proxy", { limits, proxyKey: proxy.key, key: tenant.key, body: {} });
    expect(refused.status).toBe(429);
    expect(refused.body.proxy_error).toMatchObject({ status: 429 });
    expect(await destinationSaw("authenticated-limit-marker")).toBe(0);
  }, 30_000);

  it("an ephemeral proxy call counts against its API key", async () => {
    const tenant = await seedTokenTenant();
    await withinOneWindow(10, 3_000);
    const limits = withLowKeyLimit();
    for (let i = 0; i < LOW_KEY_LIMIT; i++) expect((await send("GET", "/tokens", { limits, key: tenant.key })).status).toBe(200);
    const refused = await callConfigured(limits, "POST", "/proxy", {
      headers: { "SVC-API-KEY": tenant.key, "SVC-PROXY-URL": loopback("/ephemeral-limit-marker") },
      body: {},
    });
    expect(refused.status).toBe(429);
    expect(refused.body.proxy_error).toMatchObject({ status: 429 });
    expect(await destinationSaw("ephemeral-limit-marker")).toBe(0);
  }, 30_000);

  it("every operation an API key reaches documents the 429", async () => {
    const undocumented = buildApp()
      .openAPIRegistry.definitions.flatMap((definition) => (definition.type === "route" ? [definition.route] : []))
      .filter((route) => route.security?.some((scheme) => "ApiKey" in scheme) && !(429 in route.responses))
      .map((route) => `${route.method.toUpperCase()} ${route.path}`);
    expect(undocumented).toEqual([]);
    const reply = await call("GET", "/openapi.json");
    expect(reply.body.paths["/tokens"].post.responses["429"]).toBeDefined();
  });
});
