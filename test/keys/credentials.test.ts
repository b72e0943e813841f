import { describe, expect, it } from "vitest";
import { call, expectProblem, seedTenant } from "../support/harness";
import { createProxy, expectProxyError, invoke } from "../support/proxies";

/** Waits until the clock has passed `time` (ms since the epoch). */
async function until(time: number): Promise<void> {
  while (Date.now() <= time) await new Promise((resolve) => setTimeout(resolve, Math.max(10, time - Date.now() + 5)));
}

describe("expiring API keys", () => {
  it("an API key with expires_at works until then, and is a 401 saying so after", async () => {
    const tenant = await seedTenant();
    const expiresAt = new Date(Date.now() + 1_500);
    const created = await call("POST", `/applications/${tenant.managementApplicationId}/keys`, {
      key: tenant.managementKey,
      body: { expires_at: expiresAt.toISOString() },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.expires_at).toBe(expiresAt.toISOString());
    expect((await call("GET", "/applications", { key: created.body.key })).status).toBe(200);

    const listed = await call("GET", `/applications/${tenant.managementApplicationId}/keys`, { key: tenant.managementKey });
    expect(listed.body).toContainEqual({ id: created.body.id, created_at: expect.any(String), expires_at: expiresAt.toISOString() });

    await until(expiresAt.getTime());
    const refused = await call("GET", "/applications", { key: created.body.key });
    expect(expectProblem(refused, 401).detail).toBe(`The API key expired at ${expiresAt.toISOString()}`);
    // The key that does not expire is untouched.
    expect((await call("GET", "/applications", { key: tenant.managementKey })).status).toBe(200);
  });

  it("regenerate takes expires_at too, and an expiry in the past or malformed is a 400", async () => {
    const tenant = await seedTenant();
    const app = await call("POST", "/applications", { key: tenant.managementKey, body: { name: "a", type: "private", permissions: [] } });
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const regenerated = await call("POST", `/applications/${app.body.id}/regenerate`, {
      key: tenant.managementKey,
      body: { expires_at: later },
    });
    expect(regenerated.status).toBe(200);
    expect(regenerated.body.keys).toEqual([expect.objectContaining({ expires_at: later })]);
    // An empty POST naming a form content type (as the JS SDK sends it) is read as no body.
    const formless = await call("POST", `/applications/${app.body.id}/regenerate`, {
      key: tenant.managementKey,
      raw: "",
      contentType: "application/x-www-form-urlencoded",
    });
    expect(formless.status, JSON.stringify(formless.body)).toBe(200);
    expect(formless.body.keys).toEqual([expect.objectContaining({ expires_at: null })]);
    // Without a body, a key that never expires.
    const plain = await call("POST", `/applications/${app.body.id}/keys`, { key: tenant.managementKey });
    expect(plain.status).toBe(201);
    expect(plain.body.expires_at).toBeNull();

    const past = await call("POST", `/applications/${app.body.id}/keys`, {
      key: tenant.managementKey,
      body: { expires_at: "2020-01-01T00:00:00Z" },
    });
    expect(expectProblem(past, 400).errors).toEqual({ expires_at: ["must be in the future"] });
    const malformed = await call("POST", `/applications/${app.body.id}/keys`, {
      key: tenant.managementKey,
      body: { expires_at: "tomorrow" },
    });
    expectProblem(malformed, 400);
    const keys = await call("GET", `/applications/${app.body.id}/keys`, { key: tenant.managementKey });
    expect(keys.body).toHaveLength(2);
  });
});

describe("rolling a proxy key", () => {
  it("answers a new key; without a grace period the previous key stops at once", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    const rolled = await call("POST", `/proxies/${proxy.id}/key`, { key: tenant.managementKey });
    expect(rolled.status, JSON.stringify(rolled.body)).toBe(200);
    expect(rolled.body.key).toMatch(/^proxy_/);
    expect(rolled.body.key).not.toBe(proxy.key);
    expect((await invoke("POST", "", { proxyKey: rolled.body.key, body: { a: 1 } })).status).toBe(200);
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: { a: 1 } }), 401);
    // Reads show the new key.
    expect((await call("GET", `/proxies/${proxy.id}`, { key: tenant.managementKey })).body.key).toBe(rolled.body.key);
  });

  it("with grace_period_seconds the previous key works until the period ends, then stops", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    const rolled = await call("POST", `/proxies/${proxy.id}/key`, { key: tenant.managementKey, body: { grace_period_seconds: 2 } });
    // The period starts at the vault's clock during the call, no later than its answer.
    const answered = Date.now();
    expect(rolled.status).toBe(200);
    expect((await invoke("POST", "", { proxyKey: proxy.key, body: { a: 1 } })).status).toBe(200);
    expect((await invoke("POST", "", { proxyKey: rolled.body.key, body: { a: 1 } })).status).toBe(200);
    await until(answered + 2_000 + 50);
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: { a: 1 } }), 401);
    expect((await invoke("POST", "", { proxyKey: rolled.body.key, body: { a: 1 } })).status).toBe(200);
    // A second roll ends the first grace period: only the newest previous key is kept.
    const again = await call("POST", `/proxies/${proxy.id}/key`, { key: tenant.managementKey, body: { grace_period_seconds: 60 } });
    expect((await invoke("POST", "", { proxyKey: rolled.body.key, body: { a: 1 } })).status).toBe(200);
    expect((await invoke("POST", "", { proxyKey: again.body.key, body: { a: 1 } })).status).toBe(200);
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: { a: 1 } }), 401);
  });

  it("refuses a grace period beyond 30 days, and another tenant's proxy is a 404", async () => {
    const tenant = await seedTenant();
    const other = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    const tooLong = await call("POST", `/proxies/${proxy.id}/key`, {
      key: tenant.managementKey,
      body: { grace_period_seconds: 31 * 86_400 },
    });
    expectProblem(tooLong, 400);
    expectProblem(await call("POST", `/proxies/${proxy.id}/key`, { key: other.managementKey }), 404);
    expect((await invoke("POST", "", { proxyKey: proxy.key, body: { a: 1 } })).status).toBe(200);
  });
});
