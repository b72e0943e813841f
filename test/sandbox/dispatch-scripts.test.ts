import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ScriptOwner } from "../../src/context";
import { OFFICIAL_FORMULAS } from "../../src/reactors/official";
import { dispatchScriptName, SCRIPT_RETIREMENT_GRACE_MS } from "../../src/sandbox/dispatch-host";
import { callConfigured } from "../support/configured";
import { sandboxContext } from "../support/context";
import { runCron } from "../support/cron";
import { codeOnRecord, createProxy, MINUTE, runOnRecord, saveProxy, scriptOf, transform } from "../support/dispatch-scripts";
import { fakeCloudflare } from "../support/fake-cloudflare";
import { seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";

/**
 * Runs `action` while the database refuses every update of a proxy's row, as a crash between a save's
 * upload and its row write would leave it; the vault's log of the 500 is checked, not printed.
 */
async function withProxyUpdatesRefused<T>(action: () => Promise<T>): Promise<T> {
  await env.DB.prepare("CREATE TRIGGER refuse_proxy_updates BEFORE UPDATE ON proxies BEGIN SELECT RAISE(ABORT, 'refused'); END").run();
  try {
    return await expectLoggedError(/unexpected error/, action);
  } finally {
    await env.DB.prepare("DROP TRIGGER refuse_proxy_updates").run();
  }
}

describe("scripts in the dispatch namespace are named by their code", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("of two updates of one transform, where the first upload's row write lands last, the code on record is the code that runs", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "original");
    const held = cloudflare.holdNext();
    const first = saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "first");
    await held.arrived;
    const second = await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "second");
    expect(second.status).toBe(200);
    held.release();
    expect((await first).status).toBe(200);

    expect(await codeOnRecord(cloudflare, tenant, id)).toBe(transform("first"));
    expect(await runOnRecord(cloudflare, tenant, id)).toMatchObject({ body: { version: "first" } });
  });

  it("an update whose row write fails after the upload leaves the old code running", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "old");
    const failed = await withProxyUpdatesRefused(() => saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "new"));
    expect(failed.status).toBe(500);
    expect(cloudflare.calls.map((call) => call.method)).toEqual(["PUT", "PUT"]);
    expect(await codeOnRecord(cloudflare, tenant, id)).toBe(transform("old"));
    expect(await runOnRecord(cloudflare, tenant, id)).toMatchObject({ body: { version: "old" } });
  });

  it("an update or a delete removes no script at once: a call in flight may still dispatch to it", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "1");
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "2")).status).toBe(200);
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, null)).status).toBe(200);
    const deleted = await callConfigured(cloudflare.env, "DELETE", `/proxies/${id}`, { headers: { "SVC-API-KEY": tenant.managementKey } });
    expect(deleted.status).toBe(204);
    expect(cloudflare.calls.map((call) => call.method)).toEqual(["PUT", "PUT"]);
    expect(cloudflare.storedScripts()).toEqual(expect.arrayContaining([await scriptOf(tenant, id, "1"), await scriptOf(tenant, id, "2")]));
  });
});

describe("the cron retires the scripts no owner uses", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("the grace period outlasts the credential cache and any request", () => {
    expect(SCRIPT_RETIREMENT_GRACE_MS).toBeGreaterThan(60_000 + 30_000);
    expect(SCRIPT_RETIREMENT_GRACE_MS).toBeLessThanOrEqual(15 * MINUTE);
  });

  it("past the grace period it deletes superseded versions, orphans and a deleted proxy's scripts, and keeps the current ones", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const kept = await createProxy(cloudflare.env, tenant, "1");
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${kept}`, "2")).status).toBe(200);
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${kept}`, "3")).status).toBe(200);
    // An orphan: uploaded, and the row that would have named it never written.
    expect((await withProxyUpdatesRefused(() => saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${kept}`, "orphan"))).status).toBe(500);
    const gone = await createProxy(cloudflare.env, tenant, "gone");
    expect(
      (await callConfigured(cloudflare.env, "DELETE", `/proxies/${gone}`, { headers: { "SVC-API-KEY": tenant.managementKey } })).status,
    ).toBe(204);
    const names = {
      superseded: [await scriptOf(tenant, kept, "1"), await scriptOf(tenant, kept, "2")],
      current: await scriptOf(tenant, kept, "3"),
      orphan: await scriptOf(tenant, kept, "orphan"),
      deleted: await scriptOf(tenant, gone, "gone"),
    };
    const all = [...names.superseded, names.current, names.orphan, names.deleted];
    expect(cloudflare.storedScripts()).toEqual(expect.arrayContaining(all));

    await runCron(Date.now() + SCRIPT_RETIREMENT_GRACE_MS / 2, cloudflare.env);
    expect(cloudflare.storedScripts(), "inside the grace period").toEqual(expect.arrayContaining(all));

    // Found unused for the first time: an isolate may still hold a row that names it, however long
    // ago it was last found in use.
    await runCron(Date.now() + SCRIPT_RETIREMENT_GRACE_MS + MINUTE, cloudflare.env);
    expect(cloudflare.storedScripts(), "found unused once").toEqual(expect.arrayContaining(all));

    await runCron(Date.now() + 2 * SCRIPT_RETIREMENT_GRACE_MS + 2 * MINUTE, cloudflare.env);
    const stored = cloudflare.storedScripts();
    expect(stored).toContain(names.current);
    for (const name of [...names.superseded, names.orphan, names.deleted]) expect(stored).not.toContain(name);
    expect(await runOnRecord(cloudflare, tenant, kept)).toMatchObject({ body: { version: "3" } });
  });

  it("a version found in use long ago and superseded since is not deleted at the first look after: a cached row may still name it", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "long-lived");
    const longLived = await scriptOf(tenant, id, "long-lived");
    await runCron(Date.now() + SCRIPT_RETIREMENT_GRACE_MS + MINUTE, cloudflare.env);
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "next")).status).toBe(200);

    await runCron(Date.now() + 2 * SCRIPT_RETIREMENT_GRACE_MS + 2 * MINUTE, cloudflare.env);
    expect(cloudflare.storedScripts(), "just superseded").toContain(longLived);
    await runCron(Date.now() + 3 * SCRIPT_RETIREMENT_GRACE_MS + 3 * MINUTE, cloudflare.env);
    expect(cloudflare.storedScripts()).not.toContain(longLived);
  });

  it("a deletion the API refuses keeps the script's record for the next run", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const id = await createProxy(cloudflare.env, tenant, "a");
    expect((await saveProxy(cloudflare.env, tenant, "PUT", `/proxies/${id}`, "b")).status).toBe(200);
    const superseded = await scriptOf(tenant, id, "a");

    await runCron(Date.now() + SCRIPT_RETIREMENT_GRACE_MS + MINUTE, cloudflare.env);
    cloudflare.failNext(500, ["internal error"], superseded);
    await runCron(Date.now() + 2 * SCRIPT_RETIREMENT_GRACE_MS + 2 * MINUTE, cloudflare.env);
    expect(cloudflare.storedScripts()).toContain(superseded);

    await runCron(Date.now() + 2 * SCRIPT_RETIREMENT_GRACE_MS + 3 * MINUTE, cloudflare.env);
    expect(cloudflare.storedScripts()).not.toContain(superseded);
    expect(cloudflare.storedScripts()).toContain(await scriptOf(tenant, id, "b"));
  });

  it("keeps a reactor's current code and the official formulas' scripts, and deletes a reactor's superseded code", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const reactorCode = (version: number) => `module.exports = async () => ({ raw: { version: ${version} } });`;
    const created = await callConfigured(cloudflare.env, "POST", "/reactors", {
      headers: { "SVC-API-KEY": tenant.managementKey },
      body: { name: "versions", code: reactorCode(1) },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const updated = await callConfigured(cloudflare.env, "PATCH", `/reactors/${id}`, {
      headers: { "SVC-API-KEY": tenant.managementKey, "content-type": "application/merge-patch+json" },
      body: { code: reactorCode(2) },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(204);
    // The official formulas' rows, as any listing seeds them; their scripts belong to no tenant.
    expect((await callConfigured({}, "GET", "/reactor-formulas", { headers: { "SVC-API-KEY": tenant.managementKey } })).status).toBe(200);
    const [official] = OFFICIAL_FORMULAS;
    const officialOwner: ScriptOwner = { tenantId: null, id: official!.id, kind: "reactor" };
    await sandboxContext(tenant.tenantId, cloudflare.env).sandbox.publish(officialOwner, official!.code);

    await runCron(Date.now() + SCRIPT_RETIREMENT_GRACE_MS + MINUTE, cloudflare.env);
    await runCron(Date.now() + 2 * SCRIPT_RETIREMENT_GRACE_MS + 2 * MINUTE, cloudflare.env);
    const reactorOwner: ScriptOwner = { tenantId: tenant.tenantId, id, kind: "reactor" };
    const stored = cloudflare.storedScripts();
    expect(stored).not.toContain(await dispatchScriptName(reactorOwner, reactorCode(1)));
    expect(stored).toContain(await dispatchScriptName(reactorOwner, reactorCode(2)));
    expect(stored).toContain(await dispatchScriptName(officialOwner, official!.code));
  });
});
