import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApplicationKey } from "../../src/applications/service";
import * as storage from "../../src/applications/storage";
import type { Database } from "../../src/db/client";
import { claimIdempotencyKey, controlCommitMarkOf, rememberResponse, requestHashOf } from "../../src/idempotency/service";
import { APPLICATIONS, IDEMPOTENCY_LEASE_MS } from "../../src/limits";
import { tenantContext } from "../support/context";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { stoppedAfterClaim } from "../support/idempotency";

/** Attacks on application keys written in the statement that checks their application (docs/decisions.md). */
describe("application keys: attacks on the in-statement check", () => {
  const keysOf = async (applicationId: string) =>
    (await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE application_id = ?").bind(applicationId).first<{ n: number }>())!.n;
  const marksOf = async (tenantId: string, key: string) =>
    (await env.DB.prepare("SELECT count(*) AS n FROM idempotency_marks WHERE tenant_id = ? AND key = ?")
      .bind(tenantId, key)
      .first<{ n: number }>())!.n;
  const fill = async (managementKey: string, id: string, to: number) => {
    while ((await keysOf(id)) < to) expect((await call("POST", `/applications/${id}/keys`, { key: managementKey })).status).toBe(201);
  };

  it("another tenant's application id answers exactly as an id that does not exist, and nothing is written beside it", async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const app = await createApplication(a, { type: "private", permissions: ["token:read"] });
    const missing = crypto.randomUUID();
    for (const route of ["keys", "regenerate"]) {
      const foreign = expectProblem(await call("POST", `/applications/${app.id}/${route}`, { key: b.managementKey }), 404);
      const none = expectProblem(await call("POST", `/applications/${missing}/${route}`, { key: b.managementKey }), 404);
      expect(foreign.detail.replace(app.id, "ID")).toBe(none.detail.replace(missing, "ID"));
    }
    expect(await keysOf(app.id)).toBe(1);
    // beside() reads the application with the key's tenant: a key row of tenant B naming A's application is refused.
    const context = await tenantContext(b.tenantId);
    const row = {
      id: crypto.randomUUID(),
      tenantId: b.tenantId,
      applicationId: app.id,
      hash: crypto.randomUUID(),
      createdAt: Date.now(),
      expiresAt: null,
    };
    const refused = await storage.insertKey(context.control, row, APPLICATIONS.maxKeys).catch((error) => error);
    expect(storage.isKeyRefusedError(refused)).toBe(true);
    expect(await keysOf(app.id)).toBe(1);
  });

  it("concurrent /keys and /regenerate never leave more than the limit", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    await fill(tenant.managementKey, app.id, APPLICATIONS.maxKeys - 3);
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call("POST", `/applications/${app.id}/${i % 10 === 5 ? "regenerate" : "keys"}`, { key: tenant.managementKey }),
      ),
    );
    for (const reply of replies) expect([200, 201, 409]).toContain(reply.status);
    expect(await keysOf(app.id)).toBeLessThanOrEqual(APPLICATIONS.maxKeys);
  });

  it("a refused batch writes nothing: regenerate's delete of the old keys and update are rolled back, no mark is left", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    await fill(tenant.managementKey, app.id, 3);
    const before = await env.DB.prepare("SELECT modified_at, modified_by FROM applications WHERE id = ?").bind(app.id).first();
    const context = await tenantContext(tenant.tenantId);
    // The key names an application that does not exist, so its insert (the batch's third statement) is refused.
    const row = {
      id: crypto.randomUUID(),
      tenantId: tenant.tenantId,
      applicationId: crypto.randomUUID(),
      hash: crypto.randomUUID(),
      createdAt: Date.now(),
      expiresAt: null,
    };
    const refused = await storage.replaceKeys(context.control, tenant.tenantId, app.id, row, "x").catch((error) => error);
    expect(storage.isKeyRefusedError(refused)).toBe(true);
    expect(await keysOf(app.id)).toBe(3);
    expect(await env.DB.prepare("SELECT modified_at, modified_by FROM applications WHERE id = ?").bind(app.id).first()).toEqual(before);

    // Over HTTP with an idempotency key: a refused /keys (full) leaves no mark.
    await fill(tenant.managementKey, app.id, APPLICATIONS.maxKeys);
    const full = await call("POST", `/applications/${app.id}/keys`, {
      key: tenant.managementKey,
      headers: { "SVC-IDEMPOTENCY-KEY": "full" },
    });
    expectProblem(full, 409);
    expect(await marksOf(tenant.tenantId, "full")).toBe(0);
    expect(await keysOf(app.id)).toBe(APPLICATIONS.maxKeys);
  });

  it("an idempotent retry after a refused write replays its 409 / 404, not a 500", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    await fill(tenant.managementKey, app.id, APPLICATIONS.maxKeys);
    const headers = { "SVC-IDEMPOTENCY-KEY": "again" };
    const first = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey, headers });
    expectProblem(first, 409);
    const second = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey, headers });
    expect(second.status).toBe(409);
    expect(second.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(second.body).toEqual(first.body);

    expect((await call("DELETE", `/applications/${app.id}`, { key: tenant.managementKey })).status).toBe(204);
    const gone = { "SVC-IDEMPOTENCY-KEY": "gone" };
    expectProblem(await call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey, headers: gone }), 404);
    expect((await call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey, headers: gone })).status).toBe(404);
  });

  /**
   * An application one key short of its limit, a first attempt that claimed `key` for its POST
   * /applications/{id}/keys past its lease, and a retry that took its claim over.
   */
  async function takenOver(key: string) {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    await fill(tenant.managementKey, app.id, APPLICATIONS.maxKeys - 1);
    const path = `/applications/${app.id}/keys`;
    const first = await stoppedAfterClaim(
      tenant.tenantId,
      tenant.managementKey,
      key,
      { method: "POST", path, rawBody: "" },
      IDEMPOTENCY_LEASE_MS + 1000,
      "control",
    );
    const takeover = await claimIdempotencyKey(await tenantContext(tenant.tenantId), first.principal, {
      key,
      requestHash: await requestHashOf("POST", path, ""),
      request: `POST ${path}`,
      commitsWithWrite: true,
      marksInControl: true,
    });
    if (!("claim" in takeover)) throw new Error("the retry did not take the claim over");
    const second = await tenantContext(tenant.tenantId);
    second.markControlCommitWith(controlCommitMarkOf(second, takeover.claim));
    return { tenant, app, path, first, claim: takeover.claim, second };
  }

  it("a retry whose write is refused because the attempt it took over took the last key answers that key, not 'full'", async () => {
    const { tenant, app, path, first, claim, second } = await takenOver("raced");
    // The retry passes its count (19 keys); the first attempt commits the 20th key with its mark just before the retry's batch.
    let written: { id: string; key: string } | undefined;
    const control = second.control;
    const raced = new Proxy(control, {
      get(target, property, receiver) {
        if (property === "batch") {
          return async (queries: Parameters<Database["batch"]>[0]) => {
            written = JSON.parse(JSON.stringify(await createApplicationKey(first.context, first.principal, app.id, {})));
            return target.batch(queries);
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    Object.defineProperty(second, "control", { get: () => raced });

    const refusal = await createApplicationKey(second, first.principal, app.id, {}).catch((error) => error);
    expect(await keysOf(app.id)).toBe(APPLICATIONS.maxKeys);
    // The batch fails on the mark, not on the key: the request's write is the other attempt's.
    expect(refusal).toMatchObject({ status: 409, message: expect.stringMatching(/another attempt/i) });
    expect(claim.committedElsewhere).toBe(true);
    await rememberResponse(second, claim, 409, JSON.stringify({ status: 409 }));

    const retry = await call("POST", path, { key: tenant.managementKey, headers: { "SVC-IDEMPOTENCY-KEY": "raced" } });
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ id: written!.id, key: written!.key });
  });

  it("a retry that finds the limit reached by the attempt it took over keeps no 'full': the next retry answers that attempt's key", async () => {
    const { tenant, app, path, first, claim, second } = await takenOver("counted");
    // The first attempt commits the 20th key (with its mark) before the retry counts.
    const written = JSON.parse(JSON.stringify(await createApplicationKey(first.context, first.principal, app.id, {})));
    const refusal = await createApplicationKey(second, first.principal, app.id, {}).catch((error) => error);
    expect(refusal).toMatchObject({ status: 409, message: expect.stringMatching(/holds at most 20 keys/) });
    // The middleware hands the refusal to rememberResponse, which finds the request's mark and keeps nothing.
    await rememberResponse(second, claim, 409, JSON.stringify({ status: 409, detail: refusal.message }));

    const retry = await call("POST", path, { key: tenant.managementKey, headers: { "SVC-IDEMPOTENCY-KEY": "counted" } });
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ id: written.id, key: written.key });
    expect(await keysOf(app.id)).toBe(APPLICATIONS.maxKeys);
  });

  it("bad input on these routes is a 4xx", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const key = tenant.managementKey;
    for (const route of ["keys", "regenerate"]) {
      const path = `/applications/${app.id}/${route}`;
      const replies = [
        await call("POST", `/applications/not-a-uuid/${route}`, { key }),
        await call("POST", `/applications/${app.id.toUpperCase()}/${route}`, { key }),
        await call("POST", path, { key, body: { expires_at: "2020-01-01T00:00:00Z" } }),
        await call("POST", path, { key, body: { expires_at: "9999-12-31T23:59:59-23:59" } }),
        await call("POST", path, { key, body: { expires_at: "2026-02-30T00:00:00Z" } }),
        await call("POST", path, { key, body: { expires_at: 1e30 } }),
        await call("POST", path, { key, body: { extra: 1 } }),
        await call("POST", path, { key, raw: "{", contentType: "application/json" }),
        await call("POST", path, { key, raw: "[]", contentType: "application/json" }),
        await call("POST", path, { key, raw: "null", contentType: "application/json" }),
        await call("POST", path, { key, raw: "x", contentType: "text/plain" }),
        await call("POST", path, { key, headers: { "SVC-IDEMPOTENCY-KEY": "a b" } }),
        await call("POST", path, { key, headers: { "SVC-IDEMPOTENCY-KEY": "k".repeat(256) } }),
      ];
      for (const reply of replies) expect(reply.status, `${route}: ${reply.text}`).toBeLessThan(500);
    }
  });
});
