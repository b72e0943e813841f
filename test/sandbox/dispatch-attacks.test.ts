import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ScriptOwner } from "../../src/context";
import { currentTransformCode } from "../../src/proxies/service";
import { retireUnusedScripts, SCRIPT_RETIREMENT_GRACE_MS, SCRIPT_VERSIONS_MAX } from "../../src/sandbox/dispatch-host";
import { callConfigured } from "../support/configured";
import { requestContext, sandboxContext } from "../support/context";
import { runCron } from "../support/cron";
import { createProxy, MINUTE, runOnRecord, saveProxy, scriptOf } from "../support/dispatch-scripts";
import { fakeCloudflare } from "../support/fake-cloudflare";
import { seedTenant } from "../support/harness";

describe("attacks on the dispatched scripts", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("a sweep that deletes a version while a save of that very code names it again leaves the code on record runnable", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "x");
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "y")).status).toBe(200);
    // First look: x is found unused.
    await runCron(Date.now() + SCRIPT_RETIREMENT_GRACE_MS + MINUTE, cloudflare.env);

    // The second look reads x's record; meanwhile the tenant saves x again: recorded and uploaded,
    // its row write still to come when the sweep deletes x.
    const { control, config } = requestContext(cloudflare.env);
    let save: Promise<{ status: number }> | null = null;
    let release = () => {};
    await retireUnusedScripts(control, config, Date.now() + 2 * SCRIPT_RETIREMENT_GRACE_MS + 2 * MINUTE, async (owner) => {
      if (save === null) {
        const held = cloudflare.holdNext();
        release = held.release;
        save = saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "x");
        await held.arrived;
      }
      return currentTransformCode(control, owner);
    });
    expect(cloudflare.storedScripts()).not.toContain(await scriptOf(tenant, id, "x"));
    release();
    expect((await save!).status).toBe(200);

    expect(await runOnRecord(cloudflare, tenant, id)).toMatchObject({ body: { version: "x" } });
    // Uploaded again, and recorded for the cron.
    expect(cloudflare.storedScripts()).toContain(await scriptOf(tenant, id, "x"));
    const recorded = await env.DB.prepare("SELECT name FROM dispatch_scripts WHERE name = ?")
      .bind(await scriptOf(tenant, id, "x"))
      .first();
    expect(recorded).not.toBeNull();
  });

  it("a proxy saved before its script was uploaded under its present name (an earlier release, the loader host) still runs", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy({ ...cloudflare.env, SANDBOX_HOST: "loader" }, tenant, "before");
    expect(cloudflare.storedScripts()).toEqual([]);
    expect(await runOnRecord(cloudflare, tenant, id)).toMatchObject({ body: { version: "before" } });
    expect(cloudflare.storedScripts()).toEqual([await scriptOf(tenant, id, "before")]);
  });

  it("a script that fails with the namespace's own message for a missing worker is neither uploaded again nor run twice", async () => {
    const cloudflare = fakeCloudflare();
    const owner: ScriptOwner = { tenantId: "tenant-attacks", id: crypto.randomUUID(), kind: "reactor" };
    // Thrown in its handler and, uncaught, from a timer of its isolate.
    const code =
      'module.exports = async () => { setTimeout(() => { throw new Error("Worker not found: x"); }, 0);\n' +
      '  await new Promise((resolve) => setTimeout(resolve, 20)); throw new Error("Worker not found: y"); };';
    const sandbox = sandboxContext("tenant-attacks", cloudflare.env).sandbox;
    await sandbox.publish(owner, code);
    await expect(sandbox.run({ owner, code, input: { args: {}, configuration: {} }, application: null })).rejects.toThrow();
    expect(cloudflare.calls.map((call) => call.method)).toEqual(["PUT"]);
    expect(cloudflare.dispatches.filter((dispatch) => dispatch.options?.outbound?.EGRESS?.check === undefined)).toHaveLength(1);
  });

  it("deletions the API refuses every time do not take every run's batch: the other scripts are still retired", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "old");
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "new")).status).toBe(200);
    // A full batch of records, older than any, whose deletion the API always refuses.
    const stuck = Array.from({ length: 50 }, (_, index) => `request-transform-${index.toString(16).padStart(40, "0")}`);
    await env.DB.batch(
      stuck.map((name) =>
        env.DB.prepare(
          "INSERT INTO dispatch_scripts (name, tenant_id, kind, owner_id, published_at, checked_at, unused_since) VALUES (?, ?, 'request-transform', ?, 0, 0, 0)",
        ).bind(name, tenant.tenantId, crypto.randomUUID()),
      ),
    );
    cloudflare.failAlways(500, ["internal error"], (name) => stuck.includes(name));

    for (let look = 1; look <= 4; look++) {
      await runCron(Date.now() + look * (SCRIPT_RETIREMENT_GRACE_MS + MINUTE), cloudflare.env);
    }
    expect(cloudflare.storedScripts()).not.toContain(await scriptOf(tenant, id, "old"));
    expect(cloudflare.storedScripts()).toContain(await scriptOf(tenant, id, "new"));
    await env.DB.prepare(`DELETE FROM dispatch_scripts WHERE name IN (${stuck.map(() => "?").join(", ")})`)
      .bind(...stuck)
      .run();
  });

  it("the same code in both transforms of a proxy, and in another tenant's proxy, stays while either still runs it", async () => {
    const cloudflare = fakeCloudflare();
    const [tenant, other] = [await seedTenant(), await seedTenant()];
    const id = await createProxy(cloudflare.env, tenant, "shared", "shared");
    const otherId = await createProxy(cloudflare.env, other, "shared");
    // The response transform changes; the other tenant's proxy goes.
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "shared", "changed")).status).toBe(200);
    const deleted = await callConfigured(cloudflare.env, "DELETE", `/proxies/${otherId}`, {
      headers: { "SVC-API-KEY": other.managementKey },
    });
    expect(deleted.status).toBe(204);

    for (let look = 1; look <= 3; look++) {
      await runCron(Date.now() + look * (SCRIPT_RETIREMENT_GRACE_MS + MINUTE), cloudflare.env);
    }
    const stored = cloudflare.storedScripts();
    expect(stored).toContain(await scriptOf(tenant, id, "shared"));
    expect(stored).toContain(await scriptOf(tenant, id, "changed", "response-transform"));
    expect(stored).not.toContain(await scriptOf(tenant, id, "shared", "response-transform"));
    expect(stored).not.toContain(await scriptOf(other, otherId, "shared"));
    const uploads = cloudflare.calls.filter((call) => call.method === "PUT").length;
    expect(await runOnRecord(cloudflare, tenant, id)).toMatchObject({ body: { version: "shared" } });
    expect(await runOnRecord(cloudflare, tenant, id, "response-transform")).toMatchObject({ body: { version: "changed" } });
    // Both ran from what the sweep kept: nothing had to be uploaded again.
    expect(cloudflare.calls.filter((call) => call.method === "PUT")).toHaveLength(uploads);
  });

  it("a tenant saving new code in a loop cannot fill the namespace faster than the cron retires it", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "v0");
    const statuses: number[] = [];
    for (let version = 1; version < SCRIPT_VERSIONS_MAX + 5; version++) {
      statuses.push((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, `v${version}`)).status);
    }
    // v0 to v19 are recorded: the twentieth version is the last.
    expect(statuses.slice(0, SCRIPT_VERSIONS_MAX - 1)).toEqual(Array(SCRIPT_VERSIONS_MAX - 1).fill(200));
    expect(statuses.slice(SCRIPT_VERSIONS_MAX - 1)).toEqual(Array(5).fill(429));
    expect(cloudflare.storedScripts()).toHaveLength(SCRIPT_VERSIONS_MAX);
    const last = `v${SCRIPT_VERSIONS_MAX - 1}`;
    // Saving the code on record again is no new version, and the proxy keeps running it.
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, last)).status).toBe(200);
    expect(await runOnRecord(cloudflare, tenant, id)).toMatchObject({ body: { version: last } });

    // Once the cron has retired the superseded versions, new code can be saved again.
    for (let look = 1; look <= 3; look++) {
      await runCron(Date.now() + look * (SCRIPT_RETIREMENT_GRACE_MS + MINUTE), cloudflare.env);
    }
    expect(cloudflare.storedScripts()).toEqual([await scriptOf(tenant, id, last)]);
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "after")).status).toBe(200);
  });

  it("however many live scripts the namespace holds, a superseded version is retired two looks after its owner's save", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    // Three batches' worth of live scripts, all found in use once.
    for (let index = 0; index < 150; index++) await createProxy(cloudflare.env, tenant, `live-${index}`);
    const id = await createProxy(cloudflare.env, tenant, "v1");
    const start = Date.now();
    for (let look = 1; look <= 4; look++) await runCron(start + look * (SCRIPT_RETIREMENT_GRACE_MS + MINUTE), cloudflare.env);

    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "v2")).status).toBe(200);
    // Two looks a grace period apart, counted from the save (the clock of these runs is ahead of it).
    await runCron(start + 5 * (SCRIPT_RETIREMENT_GRACE_MS + MINUTE), cloudflare.env);
    await runCron(start + 6 * (SCRIPT_RETIREMENT_GRACE_MS + MINUTE), cloudflare.env);
    expect(cloudflare.storedScripts()).not.toContain(await scriptOf(tenant, id, "v1"));
    expect(cloudflare.storedScripts()).toContain(await scriptOf(tenant, id, "v2"));
    expect(cloudflare.storedScripts()).toHaveLength(151);
  });
});
