import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import migration from "../../migrations/0024_token_counts.sql?raw";
import { REPORTED_CONTAINERS } from "../../src/tenants/schema";
import { DATA_BINDINGS } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { convertIntent, createIntent, seedIntentTenant } from "../support/token-intents";
import { createToken, expireToken, patchToken, seedTokenTenant, seedTokenTenantIn, VISA } from "../support/tokens";

/*
 * GET /tenants/self/reports/usage: the tenant's tokens by type and by container. The counts are kept
 * by triggers on the token tables as every path writes them (migrations/0024_token_counts.sql); each
 * test changes tokens through the API, a move or the cron, and reads the report.
 */

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

async function report(tenant: Tenant) {
  const reply = await call("GET", "/tenants/self/reports/usage", { key: tenant.managementKey });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

/** The report's counts alone: { type: count } and { container: count }. */
async function counts(tenant: Tenant) {
  const { token_report } = await report(tenant);
  const byType = Object.fromEntries(
    Object.entries(token_report.metrics_by_type).map(([type, metrics]: [string, any]) => [type, metrics.count]),
  );
  const byContainer = Object.fromEntries(
    Object.entries(token_report.metrics_by_container).map(([container, metrics]: [string, any]) => [container, metrics.count]),
  );
  return { total: token_report.total_tokens as number, byType, byContainer };
}

/** The tenant's rows in one database's count tables: a purged copy leaves none. */
async function countRows(database: string, tenantId: string): Promise<number> {
  const d1 = DATA_BINDINGS[database]!;
  const [types, containers] = await d1.batch<{ n: number }>([
    d1.prepare("SELECT count(*) AS n FROM token_counts WHERE tenant_id = ?").bind(tenantId),
    d1.prepare("SELECT count(*) AS n FROM container_counts WHERE tenant_id = ?").bind(tenantId),
  ]);
  return types!.results[0]!.n + containers!.results[0]!.n;
}

describe("tenants: GET /tenants/self/reports/usage", () => {
  it("a new tenant holds no tokens", async () => {
    const tenant = await seedTenant();
    expect(await report(tenant)).toEqual({
      token_report: { total_tokens: 0, metrics_by_type: {}, metrics_by_container: {}, metrics_by_container_complete: true },
      total_tokens: 0,
    });
  });

  it("counts created tokens by type, with the newest one's creation time, and by each container they name", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "token", data: "a", containers: ["/a/"] });
    await createToken(tenant.key, { type: "token", data: "b", containers: ["/a/", "/b/"] });
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const body = await report(tenant);
    expect(body.total_tokens).toBe(3);
    expect(body.token_report.total_tokens).toBe(3);
    expect(body.token_report.metrics_by_type.card_number).toEqual({ count: 1, last_created_at: card.created_at });
    expect(body.token_report.metrics_by_type.token.count).toBe(2);
    expect((await counts(tenant)).byContainer).toEqual({ "/a/": 2, "/b/": 1, "/pci/high/": 1 });
  });

  it("tokenize counts every token it creates", async () => {
    const tenant = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", {
      key: tenant.key,
      body: { first: "x", card: { type: "card_number", data: VISA }, nested: ["y", "z"] },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(await counts(tenant)).toMatchObject({ total: 4, byType: { token: 3, card_number: 1 } });
  });

  it("a deduplicated create counts its token once", async () => {
    const tenant = await seedTokenTenant();
    const first = await createToken(tenant.key, { type: "card_number", data: VISA, deduplicate_token: true });
    const again = await call("POST", "/tokens", { key: tenant.key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    expect(again.body.id).toBe(first.id);
    expect((await counts(tenant)).byType).toEqual({ card_number: 1 });
  });

  it("a delete takes its token off, and the type's newest time goes back to the newest left; the last one removes the type", async () => {
    const tenant = await seedTokenTenant();
    const older = await createToken(tenant.key, { type: "token", data: "older", containers: ["/kept/"] });
    const newer = await createToken(tenant.key, { type: "token", data: "newer", containers: ["/gone/"] });
    const deleted = await call("DELETE", `/tokens/${newer.id}`, { key: tenant.key });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
    const body = await report(tenant);
    expect(body.token_report.metrics_by_type).toEqual({ token: { count: 1, last_created_at: older.created_at } });
    expect(body.token_report.metrics_by_container).toEqual({ "/kept/": { count: 1 } });
    expect((await call("DELETE", `/tokens/${older.id}`, { key: tenant.key })).status).toBe(204);
    expect(await counts(tenant)).toEqual({ total: 0, byType: {}, byContainer: {} });
  });

  it("an update that changes a token's containers moves its count between them", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x", containers: ["/before/"] });
    const reply = await patchToken(tenant.key, token.id, { containers: ["/after/", "/also/"] });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(await counts(tenant)).toEqual({ total: 1, byType: { token: 1 }, byContainer: { "/after/": 1, "/also/": 1 } });
  });

  it("a token intent counts once converted into a token, not before", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    expect((await counts(tenant)).total).toBe(0);
    const converted = await convertIntent(tenant.serverKey, intent.id);
    expect(converted.status, JSON.stringify(converted.body)).toBe(201);
    expect((await counts(tenant)).byType).toEqual({ card: 1 });
  });

  it("expired tokens count until the cron purges them", async () => {
    const tenant = await seedTokenTenant();
    const expiring = await createToken(tenant.key, { type: "token", data: "soon gone" });
    await createToken(tenant.key, { type: "token", data: "stays" });
    await expireToken(expiring.id, tenant.tenantId);
    expect((await counts(tenant)).total).toBe(2);
    await runCron();
    expect((await counts(tenant)).byType).toEqual({ token: 1 });
  });

  it("a move carries the counts to the new database and leaves none in the old one", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    await createToken(tenant.key, { type: "token", data: "a", containers: ["/a/"] });
    await call("POST", "/tokenize", { key: tenant.key, body: { card: { type: "card_number", data: VISA }, other: "b" } });
    const before = await counts(tenant);
    expect(before.total).toBe(3);
    // The move's last copy takes the tokens changed since it began again: recent ones, these included.
    const moved = await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2" }, headers: operator });
    expect(moved.body.phase, JSON.stringify(moved.body)).toBe("done");
    expect(await counts(tenant)).toEqual(before);
    expect(await countRows("DB_1", tenant.tenantId)).toBe(0);
    await createToken(tenant.key, { type: "token", data: "after the move" });
    expect((await counts(tenant)).byType).toEqual({ token: 3, card_number: 1 });
  });

  it("a shredded tenant's counts go with its purged rows", async () => {
    const tenant = await seedTokenTenantIn("DB_2");
    await createToken(tenant.key, { type: "token", data: "doomed", containers: ["/x/"] });
    expect(await countRows("DB_2", tenant.tenantId)).toBe(2);
    expect((await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator })).status).toBe(200);
    await runCron();
    expect(await countRows("DB_2", tenant.tenantId)).toBe(0);
  });

  it("lists at most 1,000 containers, the first in path order, and says there are more", async () => {
    const tenant = await seedTokenTenant();
    const paths = Array.from({ length: REPORTED_CONTAINERS + 20 }, (_, i) => `/c${String(i).padStart(4, "0")}/`);
    for (let i = 0; i < paths.length; i += 20) {
      const body = { type: "token", data: `batch ${i}`, containers: paths.slice(i, i + 20) };
      expect((await call("POST", "/tokens", { key: tenant.key, body })).status).toBe(201);
    }
    const { token_report } = await report(tenant);
    expect(Object.keys(token_report.metrics_by_container)).toEqual(paths.slice(0, REPORTED_CONTAINERS));
    expect(token_report.metrics_by_container_complete).toBe(false);
    expect(token_report.total_tokens).toBe(paths.length / 20);
  });

  it("the migration's backfill counts the tokens written before the triggers as the triggers do", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    await createToken(tenant.key, { type: "token", data: "a", containers: ["/a/", "/b/"] });
    await createToken(tenant.key, { type: "card_number", data: VISA });
    const kept = await report(tenant);
    const d1 = DATA_BINDINGS.DB_1!;
    await d1.batch([d1.prepare("DELETE FROM token_counts"), d1.prepare("DELETE FROM container_counts")]);
    const backfill = migration.split("--> statement-breakpoint").slice(-2);
    for (const statement of backfill) await d1.prepare(statement).run();
    expect(await report(tenant)).toEqual(kept);
  });

  it("a tenant sees only its own counts", async () => {
    const mine = await seedTokenTenant();
    const theirs = await seedTokenTenant();
    await createToken(theirs.key, { type: "token", data: "theirs", containers: ["/theirs/"] });
    await createToken(mine.key, { type: "card_number", data: VISA });
    expect(await counts(mine)).toEqual({ total: 1, byType: { card_number: 1 }, byContainer: { "/pci/high/": 1 } });
    expect(await counts(theirs)).toEqual({ total: 1, byType: { token: 1 }, byContainer: { "/theirs/": 1 } });
  });

  it("holds no token data, mask or fingerprint", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA, metadata: { owner: "secret-metadata" } });
    const text = JSON.stringify(await report(tenant));
    for (const leak of [VISA, VISA.slice(-4), token.fingerprint, token.id, "secret-metadata"]) expect(text).not.toContain(leak);
  });

  it("needs tenant:read: a private key and a management key without it get a 403 naming it; no key, a 401", async () => {
    const tenant = await seedTokenTenant();
    const manager = await createApplication(tenant, { type: "management", permissions: ["application:read"] });
    for (const key of [tenant.key, manager.key]) {
      expect(expectProblem(await call("GET", "/tenants/self/reports/usage", { key }), 403).detail).toContain("tenant:read");
    }
    expectProblem(await call("GET", "/tenants/self/reports/usage"), 401);
  });
});
