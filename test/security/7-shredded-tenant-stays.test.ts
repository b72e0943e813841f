import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { callConfigured } from "../support/configured";
import { runCron } from "../support/cron";
import { call, expectProblem, type Reply } from "../support/harness";
import { withMethod } from "../support/substitute";

/*
 * Rule 7: a shredded tenant never comes back. The tenant BOOTSTRAP_API_KEY creates has ids derived
 * from the key, so without a tombstone the next isolate to start after the purge would create it
 * again, empty, and hand the same key a working management application.
 */

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

/** GET /applications with the bootstrap key, on a worker configured with it (and any other `bindings`). */
function asBootstrap(bootstrapKey: string, callWith = callConfigured, bindings: Record<string, unknown> = {}): Promise<Reply> {
  return callWith({ ...bindings, BOOTSTRAP_API_KEY: bootstrapKey }, "GET", "/applications", { headers: { "SVC-API-KEY": bootstrapKey } });
}

/** The same call, answered by a fresh isolate: new module instances, so nothing remembers having bootstrapped. */
async function asBootstrapInFreshIsolate(bootstrapKey: string, bindings: Record<string, unknown> = {}): Promise<Reply> {
  vi.resetModules();
  const fresh = await import("../support/configured");
  return asBootstrap(bootstrapKey, fresh.callConfigured, bindings);
}

async function tenantRows(tenantId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM tenants WHERE id = ?").bind(tenantId).first<{ n: number }>();
  return row!.n;
}

describe("rule 7: a shredded tenant never comes back", () => {
  it("BOOTSTRAP_API_KEY does not re-create its tenant after the shred and the purge, even in a fresh isolate", async () => {
    const bootstrapKey = `key_${crypto.randomUUID()}${crypto.randomUUID()}`;
    const first = await asBootstrap(bootstrapKey);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const tenantId: string = first.body.data[0].tenant_id;

    expect((await call("DELETE", `/tenants/${tenantId}`, { headers: operator })).status).toBe(200);
    // Before the purge, in a fresh isolate: the tenant's row is still there, shredded.
    expectProblem(await asBootstrapInFreshIsolate(bootstrapKey), 401);

    for (let run = 0; run < 5 && (await tenantRows(tenantId)) > 0; run++) await runCron();
    expect(await tenantRows(tenantId)).toBe(0);

    expectProblem(await asBootstrap(bootstrapKey), 401);
    expectProblem(await asBootstrapInFreshIsolate(bootstrapKey), 401);
    expect(await tenantRows(tenantId)).toBe(0);
    const keys = await env.DB.prepare("SELECT count(*) AS n FROM tenant_keys WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>();
    expect(keys!.n).toBe(0);
    // The operator sees it gone, as before.
    expectProblem(await call("DELETE", `/tenants/${tenantId}`, { headers: operator }), 404);
  });

  it("a fresh isolate of a bootstrapped vault reads its tenant and writes nothing", async () => {
    const bootstrapKey = `key_${crypto.randomUUID()}${crypto.randomUUID()}`;
    expect((await asBootstrap(bootstrapKey)).status).toBe(200);
    const statements: string[] = [];
    const recording = withMethod(env.DB, "prepare", (sql: string) => {
      statements.push(sql);
      return env.DB.prepare(sql);
    });
    expect((await asBootstrapInFreshIsolate(bootstrapKey, { DB: recording })).status).toBe(200);
    expect(statements.some((sql) => sql.includes("shredded_tenants"))).toBe(true);
    expect(statements.filter((sql) => /INSERT INTO (tenants|tenant_keys)/.test(sql))).toEqual([]);
  });

  it("another bootstrap key still creates its own tenant", async () => {
    const bootstrapKey = `key_${crypto.randomUUID()}${crypto.randomUUID()}`;
    expect((await asBootstrapInFreshIsolate(bootstrapKey)).status).toBe(200);
  });
});
