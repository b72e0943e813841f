import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { credentialsChanged, LookupCache } from "../../src/auth/lookup-cache";
import { callConfigured } from "../support/configured";
import { createApplication, expectProblem, type Reply, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, loopback } from "../support/proxies";
import { createToken } from "../support/tokens";

// An isolate reuses a credential lookup for CREDENTIAL_CACHE_TTL_MS. A write made through this
// isolate clears it at once; a write another isolate makes (here: straight into D1, which this
// isolate never hears of) is seen once the entry is older than the time to live. Every call below
// goes through one module instance (callConfigured), so the cache the test fills is the one it reads.

// One second: long enough that the calls between a change and the check stay inside it even on a
// slow machine, short enough to wait out.
const TTL = { CREDENTIAL_CACHE_TTL_MS: "1000" };
const PAST_TTL_MS = 1_200;
const NO_CACHE = { CREDENTIAL_CACHE_TTL_MS: "0" };
const LONG = { CREDENTIAL_CACHE_TTL_MS: "60000" };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function keyHolder() {
  const tenant = await seedTenant();
  const app = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read", "token:use"] });
  // An authenticated, permitted read of a token that does not exist answers 404; without the key 401,
  // without token:read 403.
  const readTokens = (overrides: Record<string, string>) =>
    callConfigured(overrides, "GET", `/tokens/${crypto.randomUUID()}`, { headers: { "SVC-API-KEY": app.key } });
  return { tenant, app, readTokens };
}

/** Deletes the application's keys behind the vault's back, as another isolate's revocation would. */
async function revokeElsewhere(applicationId: string) {
  await env.DB.prepare("DELETE FROM api_keys WHERE application_id = ?").bind(applicationId).run();
}

function invokeConfigured(
  overrides: Record<string, string>,
  proxyKey: string,
  apiKey?: string,
  body: unknown = { amount: 1 },
): Promise<Reply> {
  return callConfigured(overrides, "POST", "/proxy/cached", {
    headers: { "SVC-PROXY-KEY": proxyKey, ...(apiKey ? { "SVC-API-KEY": apiKey } : {}) },
    body,
  });
}

const asManagement = (tenant: { managementKey: string }) => ({ headers: { "SVC-API-KEY": tenant.managementKey } });

describe("credential lookups reused by an isolate", () => {
  it("sees a key revoked by another isolate once the time to live has passed", async () => {
    const { app, readTokens } = await keyHolder();
    expect((await readTokens(TTL)).status).toBe(404);
    await revokeElsewhere(app.id);
    // Within the time to live this isolate still knows the key: the documented bound.
    expect((await readTokens(TTL)).status).toBe(404);
    await sleep(PAST_TTL_MS);
    expectProblem(await readTokens(TTL), 401);
  });

  it("reads the key on every request when the time to live is 0", async () => {
    const { app, readTokens } = await keyHolder();
    expect((await readTokens(NO_CACHE)).status).toBe(404);
    await revokeElsewhere(app.id);
    expectProblem(await readTokens(NO_CACHE), 401);
  });

  it("applies a revocation made through this isolate at once, whatever the time to live", async () => {
    const { tenant, app, readTokens } = await keyHolder();
    expect((await readTokens(LONG)).status).toBe(404);
    const keys = await callConfigured(LONG, "GET", `/applications/${app.id}/keys`, {
      headers: { "SVC-API-KEY": tenant.managementKey },
    });
    const revoked = await callConfigured(LONG, "DELETE", `/applications/${app.id}/keys/${keys.body[0].id}`, {
      headers: { "SVC-API-KEY": tenant.managementKey },
    });
    expect(revoked.status).toBe(204);
    expectProblem(await readTokens(LONG), 401);
  });

  it("applies a permission change made through this isolate at once", async () => {
    const { tenant, app, readTokens } = await keyHolder();
    expect((await readTokens(LONG)).status).toBe(404);
    const updated = await callConfigured(LONG, "PUT", `/applications/${app.id}`, {
      headers: { "SVC-API-KEY": tenant.managementKey },
      body: { name: "narrowed", permissions: ["token:use"] },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expectProblem(await readTokens(LONG), 403);
  });

  it("ends a proxy's key at once when the proxy is deleted through this isolate", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    expect((await invokeConfigured(LONG, proxy.key)).status).toBe(200);
    const deleted = await callConfigured(LONG, "DELETE", `/proxies/${proxy.id}`, {
      headers: { "SVC-API-KEY": tenant.managementKey },
    });
    expect(deleted.status).toBe(204);
    const refused = await invokeConfigured(LONG, proxy.key);
    expect(refused.status).toBe(401);
    expect(refused.body).toHaveProperty("proxy_error");
  });

  it("applies a proxy replaced through this isolate at once", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    expect((await invokeConfigured(LONG, proxy.key)).status).toBe(200);
    const replaced = await callConfigured(LONG, "PUT", `/proxies/${proxy.id}`, {
      ...asManagement(tenant),
      body: { name: "now closed", destination_url: loopback(), require_auth: true },
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect((await invokeConfigured(LONG, proxy.key)).status).toBe(401);
  });

  it("applies an application deleted through this isolate at once, to its keys and its proxies", async () => {
    const { tenant, app, readTokens } = await keyHolder();
    const token = await createToken(app.key, { type: "token", data: "secret" });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: app.id } });
    const withReference = { value: `{{ ${token.id} }}` };
    expect((await readTokens(LONG)).status).toBe(404);
    expect((await invokeConfigured(LONG, proxy.key, undefined, withReference)).status).toBe(200);
    const deleted = await callConfigured(LONG, "DELETE", `/applications/${app.id}`, asManagement(tenant));
    expect(deleted.status).toBe(204);
    expectProblem(await readTokens(LONG), 401);
    // The proxy now acts without an application, so a request holding references is refused.
    expect((await invokeConfigured(LONG, proxy.key, undefined, withReference)).status).toBe(403);
  });

  it("sees a proxy deleted by another isolate once the time to live has passed", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    expect((await invokeConfigured(TTL, proxy.key)).status).toBe(200);
    await env.DB.prepare("DELETE FROM proxies WHERE id = ?").bind(proxy.id).run();
    expect((await invokeConfigured(TTL, proxy.key)).status).toBe(200);
    await sleep(PAST_TTL_MS);
    expect((await invokeConfigured(TTL, proxy.key)).status).toBe(401);
  });

  it("sees the caller's revoked key on an authenticated proxy once the time to live has passed", async () => {
    const { tenant, app } = await keyHolder();
    const proxy = await createProxy(tenant);
    expect((await invokeConfigured(TTL, proxy.key, app.key)).status).toBe(200);
    await revokeElsewhere(app.id);
    await sleep(PAST_TTL_MS);
    expect((await invokeConfigured(TTL, proxy.key, app.key)).status).toBe(401);
  });

  it("refuses a time to live that is not a whole number of milliseconds up to a minute", async () => {
    for (const value of ["-1", "1.5", "soon", "60001"]) {
      const reply = await expectLoggedError(/Invalid configuration: CREDENTIAL_CACHE_TTL_MS/, () =>
        callConfigured({ CREDENTIAL_CACHE_TTL_MS: value }, "GET", "/health"),
      );
      const problem = expectProblem(reply, 500);
      expect(problem.detail).toContain("CREDENTIAL_CACHE_TTL_MS");
    }
  });
});

describe("LookupCache", () => {
  const grants = (value: string | null) => value !== null;

  it("does not keep a lookup that raced a credential change", async () => {
    const cache = new LookupCache<string | null>({ entries: 10, weight: 10 }, () => 1);
    let release!: () => void;
    const slow = cache.lookup("k", 60_000, () => new Promise<string>((resolve) => (release = () => resolve("before"))), grants);
    credentialsChanged();
    release();
    expect(await slow).toBe("before");
    expect(await cache.lookup("k", 60_000, async () => "after", grants)).toBe("after");
  });

  it("neither reads nor keeps an entry when the time to live is 0", async () => {
    const cache = new LookupCache<string | null>({ entries: 10, weight: 10 }, () => 1);
    await cache.lookup("k", 60_000, async () => "kept", grants);
    expect(await cache.lookup("k", 0, async () => "fresh", grants)).toBe("fresh");
    expect(await cache.lookup("k", 60_000, async () => "other", grants)).toBe("kept");
  });

  it("keeps only lookups that grant something", async () => {
    const cache = new LookupCache<string | null>({ entries: 10, weight: 10 }, () => 1);
    expect(await cache.lookup("k", 60_000, async () => null, grants)).toBeNull();
    expect(await cache.lookup("k", 60_000, async () => "granted", grants)).toBe("granted");
    expect(await cache.lookup("k", 60_000, async () => "reloaded", grants)).toBe("granted");
  });

  // The clock is faked (Date only): the entries' ages are what these rules are about.
  const at = (ms: number) => vi.setSystemTime(ms);
  const withFakeClock = async (test: () => Promise<void>) => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      at(0);
      await test();
    } finally {
      vi.useRealTimers();
    }
  };

  it("reads an entry again near its end in one request, while the others use it until it expires", async () => {
    await withFakeClock(async () => {
      const cache = new LookupCache<string | null>({ entries: 10, weight: 10 }, () => 1);
      let loads = 0;
      const load = (value: string) => async () => {
        loads++;
        return value;
      };
      await cache.lookup("k", 1_000, load("first"), grants);
      at(900);
      let release: (() => void) | undefined;
      const renewing = cache.lookup(
        "k",
        1_000,
        () =>
          new Promise<string>((resolve) => {
            loads++;
            release = () => resolve("renewed");
          }),
        grants,
      );
      const meanwhile = await Promise.all(Array.from({ length: 5 }, () => cache.lookup("k", 1_000, load("again"), grants)));
      expect(meanwhile).toEqual(Array(5).fill("first"));
      release?.();
      expect(await renewing).toBe("renewed");
      // Where the first entry has expired, requests arriving at once find the renewed one: none reads it.
      at(1_100);
      const after = await Promise.all(Array.from({ length: 5 }, () => cache.lookup("k", 1_000, load("again"), grants)));
      expect(after).toEqual(Array(5).fill("renewed"));
      expect(loads).toBe(2);
    });
  });

  it("drops an entry whose reading again no longer grants anything", async () => {
    await withFakeClock(async () => {
      const cache = new LookupCache<string | null>({ entries: 10, weight: 10 }, () => 1);
      await cache.lookup("k", 1_000, async () => "granted", grants);
      at(900);
      expect(await cache.lookup("k", 1_000, async () => null, grants)).toBeNull();
      expect(await cache.lookup("k", 1_000, async () => "read again", grants)).toBe("read again");
    });
  });

  it("leaves an entry whose reading again failed to the next request to read again", async () => {
    await withFakeClock(async () => {
      const cache = new LookupCache<string | null>({ entries: 10, weight: 10 }, () => 1);
      await cache.lookup("k", 1_000, async () => "first", grants);
      at(900);
      await expect(cache.lookup("k", 1_000, () => Promise.reject(new Error("D1 failed")), grants)).rejects.toThrow("D1 failed");
      expect(await cache.lookup("k", 1_000, async () => "renewed", grants)).toBe("renewed");
    });
  });

  it("drops the oldest entries beyond its entry and weight limits", async () => {
    const cache = new LookupCache<string | null>({ entries: 2, weight: 10 }, (value) => value?.length ?? 0);
    const load = (value: string) => async () => value;
    await cache.lookup("a", 60_000, load("a"), grants);
    await cache.lookup("b", 60_000, load("b"), grants);
    await cache.lookup("c", 60_000, load("c"), grants);
    expect(await cache.lookup("a", 60_000, load("a again"), grants)).toBe("a again");
    expect(await cache.lookup("c", 60_000, load("c again"), grants)).toBe("c");
    // "a again" (7) and "heavy" (5) together exceed the weight limit of 10.
    await cache.lookup("h", 60_000, load("heavy"), grants);
    expect(await cache.lookup("a", 60_000, load("reloaded"), grants)).toBe("reloaded");
    // A value heavier than the whole limit is never kept.
    await cache.lookup("x", 60_000, load("x".repeat(11)), grants);
    expect(await cache.lookup("x", 60_000, load("light"), grants)).toBe("light");
  });
});
