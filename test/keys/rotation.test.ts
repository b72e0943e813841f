import { env } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyLog } from "../support/audit";
import { callConfigured } from "../support/configured";
import { dataDatabaseOf, keysOfTenant } from "../support/context";
import { runCron } from "../support/cron";
import { PAN_ONLY, paymentMessage, sealEcV2 } from "../support/google-pay";
import { registerGooglePayMerchant } from "../support/google-pay-merchants";
import { call, callRoute, createApplication, dumpDatabase, expectProblem } from "../support/harness";
import { encryptJwe } from "../support/jwe";
import { expectLoggedError } from "../support/logs";
import { createProxy, invoke } from "../support/proxies";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, patchToken, seedTokenTenant, type TokenTenant } from "../support/tokens";
import { createWebhook, receivedBy, receiver } from "../support/webhooks";

const ROUND_GAP_MS = 50;
/** Rounds in a row without one token re-encrypted, while some are left, after which the rotation counts as stuck. */
const MAX_STALLED_ROUNDS = 60;
const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };
/** Tokens written before the rotation: ROTATION_BATCH_SIZE is 5 in the test pool, so re-encrypting them takes many steps. */
const SEEDED = 300;

const ssn = (n: number) =>
  `${String(100 + (n % 800)).padStart(3, "0")}-${String(10 + Math.floor(n / 800)).padStart(2, "0")}-${String(1000 + n).slice(-4)}`;

async function rotation(tenantId: string) {
  const reply = await call("GET", `/tenants/${tenantId}/rotation`, { headers: operator });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as {
    state: string;
    done: number;
    total: number | null;
    from_version: number;
    to_version: number;
    last_error: string | null;
  };
}

/** Seeds SEEDED social security numbers, searchable by value, in tokenize calls of 100. */
async function seedTokens(tenant: TokenTenant): Promise<{ id: string; data: string; fingerprint: string }[]> {
  const seeded: { id: string; data: string; fingerprint: string }[] = [];
  for (let start = 0; start < SEEDED; start += 100) {
    const values = Array.from({ length: Math.min(100, SEEDED - start) }, (_, i) => ssn(start + i));
    const reply = await call("POST", "/tokenize", {
      key: tenant.key,
      body: values.map((data) => ({ type: "social_security_number", data, search_indexes: ["{{ data }}"] })),
    });
    expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(201);
    seeded.push(
      ...reply.body.map((token: { id: string; fingerprint: string }, i: number) => ({
        id: token.id,
        data: values[i]!,
        fingerprint: token.fingerprint,
      })),
    );
  }
  return seeded;
}

describe("rotating a tenant's data keys", () => {
  it("re-encrypts everything under the new version while the tenant keeps creating, reading, searching, deduplicating and proxying, then destroys the old version", {
    // A safety net, not a measure: the rotation is judged by its progress below, which a loaded machine slows.
    timeout: 240_000,
  }, async () => {
    const tenant = await seedTokenTenant();
    const other = await seedTokenTenant();
    const seeded = await seedTokens(tenant);
    const untouched = await createToken(other.key, { type: "social_security_number", data: ssn(1) });
    const proxy = await createProxy(tenant, { configuration: { PARTNER_SECRET: "partner-secret-value" } });
    const formula = await createFormula(tenant, {
      configuration: [{ name: "REACTOR_SECRET", description: "a partner's secret", type: "string" }],
    });
    const reactor = await createReactor(tenant, formula.id, { configuration: { REACTOR_SECRET: "reactor-secret-value" } });
    const reactCaller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const hook = receiver();
    const webhook = await createWebhook(tenant, { url: hook.url });
    const clientKey = await call("POST", "/keys", { key: tenant.managementKey, body: {} });
    expect(clientKey.status, JSON.stringify(clientKey.body)).toBe(201);
    await registerGooglePayMerchant(tenant.managementKey, "rotated-merchant");
    const idempotent = { key: tenant.key, headers: { "SVC-IDEMPOTENCY-KEY": "before-rotation" } };
    const first = await call("POST", "/tokens", { ...idempotent, body: { type: "token", data: "idempotent-value" } });
    expect(first.status).toBe(201);

    const started = await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toMatchObject({ tenant_id: tenant.tenantId, from_version: 1, to_version: 2, state: "waiting", done: 0 });
    // One rotation at a time.
    expectProblem(await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator }), 409);

    // Work while it runs: every request must succeed and every search must find what exists.
    // Rounds during which re-encryption went on: the poll before shows it unfinished, the one after shows more done.
    let overlapping = 0;
    let previous: { state: string; done: number } | undefined;
    const timeline: string[] = [];
    const created: { id: string; data: string }[] = [];
    // The rotation must keep going: rounds in a row in which it re-encrypted nothing fail the test.
    let stalled = 0;
    for (let round = 0; ; round++) {
      const status = await rotation(tenant.tenantId);
      timeline.push(`${status.state} ${status.done}/${status.total}`);
      stalled = previous && status.done <= previous.done && status.done < (status.total ?? Number.POSITIVE_INFINITY) ? stalled + 1 : 0;
      if (previous && ["waiting", "running"].includes(previous.state) && status.done > previous.done) overlapping++;
      previous = status;
      if (status.state === "done") break;
      expect(stalled, `no progress in ${stalled} rounds: ${timeline.slice(-5).join(", ")}`).toBeLessThan(MAX_STALLED_ROUNDS);
      // A gap between rounds: the rotation yields to requests (src/keys/reencryption.ts, paceOf), so
      // rounds back to back, seven requests each, would leave it little room to go on.
      await new Promise((resolve) => setTimeout(resolve, ROUND_GAP_MS));
      const old = seeded[(round * 37) % seeded.length]!;
      const data = ssn(SEEDED + round);
      const [made, read, found, byFingerprint, duplicate, proxied, patched] = await Promise.all([
        call("POST", "/tokens", { key: tenant.key, body: { type: "social_security_number", data, search_indexes: ["{{ data }}"] } }),
        call("GET", `/tokens/${old.id}`, { key: tenant.key }),
        call("POST", "/tokens/search", { key: tenant.key, body: { query: `data:${old.data}` } }),
        call("POST", "/tokens/search", { key: tenant.key, body: { query: `fingerprint:${old.fingerprint}` } }),
        call("POST", "/tokens", {
          key: tenant.key,
          body: { type: "social_security_number", data: old.data, search_indexes: ["{{ data }}"], deduplicate_token: true },
        }),
        invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body: { ssn: `{{ ${old.id} }}` } }),
        patchToken(tenant.key, seeded[(round * 53 + 1) % seeded.length]!.id, { metadata: { round: String(round) } }),
      ]);
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      created.push({ id: made.body.id, data });
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(read.body.data).toBe(old.data);
      expect(
        found.body.data?.map((token: { id: string }) => token.id),
        `data:${old.data} in ${status.state}`,
      ).toEqual([old.id]);
      expect(
        byFingerprint.body.data?.map((token: { id: string }) => token.id),
        `fingerprint in ${status.state}`,
      ).toEqual([old.id]);
      expect(duplicate.status, JSON.stringify(duplicate.body)).toBe(200);
      expect(duplicate.body.id, `deduplicated in ${status.state}`).toBe(old.id);
      expect(proxied.status, proxied.text).toBe(200);
      expect(JSON.parse(proxied.json.body)).toEqual({ ssn: old.data });
      // An update racing the token's re-encryption applies all the same.
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      // A token created during the rotation is found by its value at once.
      const recent = created[Math.floor(round / 2)]!;
      const foundRecent = await call("POST", "/tokens/search", { key: tenant.key, body: { query: `data:${recent.data}` } });
      expect(foundRecent.body.data?.map((token: { id: string }) => token.id)).toEqual([recent.id]);
    }
    expect(overlapping, timeline.join("\n")).toBeGreaterThan(0);

    const done = await rotation(tenant.tenantId);
    expect(done).toMatchObject({ state: "done", from_version: 1, to_version: 2, last_error: null });
    // Tokens the rounds updated before re-encryption began were already under version 2 (one a round).
    expect(done.total).toBeGreaterThanOrEqual(SEEDED - created.length);
    expect(done.done).toBeGreaterThan(0);
    expect(done.done).toBeLessThanOrEqual(done.total!);

    // No row carries version 1 any more, and the key is gone.
    const d1 = await dataDatabaseOf(tenant.tenantId);
    const versions = await d1
      .prepare("SELECT key_version AS version, count(*) AS n FROM tokens WHERE tenant_id = ? GROUP BY key_version")
      .bind(tenant.tenantId)
      .all();
    expect(versions.results).toEqual([{ version: 2, n: SEEDED + 1 + created.length }]);
    expect(
      await d1.prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ? AND ciphertext NOT LIKE 'v2.%'").bind(tenant.tenantId).first(),
    ).toEqual({ n: 0 });
    // One statement each: D1 allows few terms in a compound SELECT.
    const sealedColumns = [
      ["key_ciphertext", "proxies"],
      ["configuration", "proxies"],
      ["configuration", "reactors"],
      ["secret_ciphertext", "webhooks"],
      ["private_key_ciphertext", "client_encryption_keys"],
      ["private_key_ciphertext", "google_pay_merchant_keys"],
    ];
    const sealedElsewhere = { results: [] as { sealed: string }[] };
    for (const [column, table] of sealedColumns) {
      const rows = await env.DB.prepare(`SELECT ${column} AS sealed FROM ${table} WHERE tenant_id = ?`)
        .bind(tenant.tenantId)
        .all<{ sealed: string }>();
      sealedElsewhere.results.push(...rows.results);
    }
    expect(sealedElsewhere.results.map((row) => row.sealed.slice(0, 3))).toEqual(["v2.", "v2.", "v2.", "v2.", "v2.", "v2."]);
    // The stored answer, and the commit mark its token's batch sealed.
    const idempotency = await d1
      .prepare("SELECT response, outcome FROM idempotency_records WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<{ response: string; outcome: string }>();
    expect([idempotency?.response.slice(0, 3), idempotency?.outcome.slice(0, 3)]).toEqual(["v2.", "v2."]);
    const keyVersions = await env.DB.prepare("SELECT version FROM tenant_keys WHERE tenant_id = ?").bind(tenant.tenantId).all();
    expect(keyVersions.results).toEqual([{ version: 2 }]);
    expect((await keysOfTenant(tenant.tenantId)).heldVersions).toEqual([2]);

    // Everything still works under version 2 alone.
    for (const old of seeded.slice(0, 5)) {
      expect((await call("GET", `/tokens/${old.id}`, { key: tenant.key })).body.data).toBe(old.data);
      const found = await call("POST", "/tokens/search", { key: tenant.key, body: { query: `data:${old.data}` } });
      expect(found.body.data.map((token: { id: string }) => token.id)).toEqual([old.id]);
    }
    // The client key's private key, re-encrypted, still opens what is encrypted to it.
    const jwe = await encryptJwe(clientKey.body.public_key_pem, clientKey.body.id, "encrypted-after-rotation");
    const fromJwe = await createToken(tenant.key, { type: "token", data: jwe });
    expect((await call("GET", `/tokens/${fromJwe.id}`, { key: tenant.key })).body.data).toBe("encrypted-after-rotation");
    // The Google Pay merchant's private key, re-encrypted, still decrypts a token.
    const googlePayer = await createApplication(tenant, { type: "private", permissions: ["google-pay:create"] });
    const token = sealEcV2(paymentMessage(PAN_ONLY), { recipientId: "merchant:rotated-merchant" });
    const decrypted = await call("POST", "/google-pay", { key: googlePayer.key, body: { google_payment_data: token } });
    expect(decrypted.status, decrypted.text).toBe(201);
    const replay = await call("POST", "/tokens", { ...idempotent, body: { type: "token", data: "idempotent-value" } });
    expect(replay.body).toEqual(first.body);
    const proxied = await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body: { ssn: `{{ ${seeded[0]!.id} }}` } });
    expect(JSON.parse(proxied.json.body)).toEqual({ ssn: seeded[0]!.data });
    const reacted = await react(reactCaller.key, reactor.id, {});
    expect(reacted.status, JSON.stringify(reacted.body)).toBe(200);
    expect(reacted.body.raw.configuration).toEqual({ REACTOR_SECRET: "reactor-secret-value" });
    await createToken(tenant.key, { type: "token", data: "after-rotation" });
    const deliveries = await receivedBy(hook.name, created.length + 2);
    for (const { body, headers } of deliveries) expect(() => new Webhook(webhook.secret).verify(body, headers)).not.toThrow();
    expect((await verifyLog(tenant)).verified).toBe(true);

    // No plaintext at rest, and the other tenant was not touched.
    const dump = await dumpDatabase();
    for (const value of [
      ...seeded.map((token) => token.data),
      ...created.map((token) => token.data),
      "partner-secret-value",
      "reactor-secret-value",
    ]) {
      expect(dump).not.toContain(value);
    }
    expect((await call("GET", `/tokens/${untouched.id}`, { key: other.key })).body.data).toBe(ssn(1));
    const otherDatabase = await dataDatabaseOf(other.tenantId);
    expect(await otherDatabase.prepare("SELECT key_version FROM tokens WHERE tenant_id = ?").bind(other.tenantId).first()).toEqual({
      key_version: 1,
    });

    // A second rotation goes on to version 3.
    const again = await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    expect(again.body).toMatchObject({ from_version: 2, to_version: 3 });
  });

  it("resumes from the cron when its chain of steps stopped", { timeout: 120_000 }, async () => {
    const tenant = await seedTokenTenant();
    await seedTokens(tenant);
    await callRoute("POST /tenants/{id}/rotation", 202, { params: { id: tenant.tenantId }, headers: operator });
    const chain = await env.DB.prepare("SELECT runner FROM key_rotations WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<{ runner: string }>();
    // A chain that stopped, as after a restart: its runner is gone and its lease has run out.
    await env.DB.prepare("UPDATE key_rotations SET runner = 'stopped', lease_until = 0 WHERE tenant_id = ?").bind(tenant.tenantId).run();
    await runCron();
    // Until it is done: the test's timeout is the safety net, so a loaded machine only makes it slower.
    let status = await rotation(tenant.tenantId);
    while (status.state !== "done") {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await rotation(tenant.tenantId);
    }
    expect(status).toMatchObject({ state: "done", to_version: 2 });
    expect(status.done).toBe(SEEDED);
    // The cron's chain finished it: the first chain's delayed message found the lease taken.
    const finishedBy = await env.DB.prepare("SELECT runner FROM key_rotations WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<{ runner: string }>();
    expect([chain!.runner, "stopped"]).not.toContain(finishedBy!.runner);
  });

  it("counts what the rows say when it ends: a chain killed after its writes, before its count, still reports done = total", {
    timeout: 120_000,
  }, async () => {
    const tenant = await seedTokenTenant();
    await seedTokens(tenant);
    await callRoute("POST /tenants/{id}/rotation", 202, { params: { id: tenant.tenantId }, headers: operator });
    let status = await rotation(tenant.tenantId);
    while (status.done === 0 && status.state !== "done") {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = await rotation(tenant.tenantId);
    }
    // A kill between a step's re-encryption and the count it writes: rows re-sealed, the count never updated.
    await env.DB.prepare("UPDATE key_rotations SET done = 0, runner = 'killed', lease_until = 0 WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .run();
    await runCron();
    while (status.state !== "done") {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await rotation(tenant.tenantId);
    }
    expect(status).toMatchObject({ state: "done", total: SEEDED, done: SEEDED });
  });

  it("is for operators only, refuses unknown tenants and a tenant being moved, and stops when the tenant is shredded", {
    timeout: 60_000,
  }, async () => {
    const tenant = await seedTokenTenant();
    expectProblem(await call("POST", `/tenants/${tenant.tenantId}/rotation`), 401);
    expectProblem(await call("POST", `/tenants/${tenant.tenantId}/rotation`, { key: tenant.managementKey }), 401);
    expectProblem(await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator }), 404);
    expectProblem(await call("POST", `/tenants/${crypto.randomUUID()}/rotation`, { headers: operator }), 404);

    const moving = await seedTokenTenant();
    const database = (await env.DB.prepare("SELECT database FROM tenants WHERE id = ?")
      .bind(moving.tenantId)
      .first<{ database: string }>())!.database;
    const target = database === "DB_1" ? "DB_2" : "DB_1";
    await callRoute("POST /tenants/{id}/move", 200, {
      params: { id: moving.tenantId },
      headers: operator,
      body: { database: target, max_batches: 1 },
    });
    expectProblem(await call("POST", `/tenants/${moving.tenantId}/rotation`, { headers: operator }), 409);

    await callRoute("POST /tenants/{id}/rotation", 202, { params: { id: tenant.tenantId }, headers: operator });
    const placed = await env.DB.prepare("SELECT database FROM tenants WHERE id = ?").bind(tenant.tenantId).first<{ database: string }>();
    const elsewhere = placed!.database === "DB_1" ? "DB_2" : "DB_1";
    expectProblem(await call("POST", `/tenants/${tenant.tenantId}/move`, { headers: operator, body: { database: elsewhere } }), 409);
    await callRoute("DELETE /tenants/{id}", 200, { params: { id: tenant.tenantId }, headers: operator });
    expectProblem(await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator }), 404);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM key_rotations WHERE tenant_id = ?").bind(tenant.tenantId).first()).toEqual({
      n: 0,
    });
  });

  it("of a rotation and a move of the same tenant started at once, at most one starts: a move copying tokens the rotation re-seals after would keep them sealed under the version it destroys", {
    timeout: 60_000,
  }, async () => {
    for (let round = 0; round < 5; round++) {
      const tenant = await seedTokenTenant();
      const placed = await env.DB.prepare("SELECT database FROM tenants WHERE id = ?").bind(tenant.tenantId).first<{ database: string }>();
      const elsewhere = placed!.database === "DB_1" ? "DB_2" : "DB_1";
      const [rotated, moved] = await Promise.all([
        call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator }),
        call("POST", `/tenants/${tenant.tenantId}/move`, { headers: operator, body: { database: elsewhere, max_batches: 1 } }),
      ]);
      const statuses = [rotated.status, moved.status];
      expect(
        statuses.filter((status) => status === 409),
        JSON.stringify([rotated.body, moved.body]),
      ).toHaveLength(1);
      expect(statuses.filter((status) => status !== 409)).toEqual([rotated.status === 409 ? 200 : 202]);
    }
  });

  it("refuses a duty cycle under 0.05, which would all but stall a rotation, or over 1", async () => {
    for (const value of ["0", "0.0001", "0.049", "1.5", "often"]) {
      const reply = await expectLoggedError(/Invalid configuration: ROTATION_DUTY_CYCLE/, () =>
        callConfigured({ ROTATION_DUTY_CYCLE: value }, "GET", "/health"),
      );
      expect(expectProblem(reply, 500).detail).toContain("ROTATION_DUTY_CYCLE");
    }
  });
});
