import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DATA_BINDINGS } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, invoke } from "../support/proxies";
import { codeReactorRunning, react } from "../support/reactors";
import { createToken, seedTokenTenant, seedTokenTenantIn, VISA } from "../support/tokens";

/*
 * GET /logs/summary: requests per hour by outcome class, the busiest proxies and reactors, and the
 * most recent errors, from the rollup the audit writer keeps with the log (src/audit/rollup.ts) and
 * the log's index of failures. Entries are written by the queue's consumer a moment after the
 * requests answer, so each test waits for the calls it made to show.
 */

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

async function summary(tenant: Tenant, window?: string) {
  const reply = await call("GET", `/logs/summary${window ? `?window=${window}` : ""}`, { key: tenant.managementKey });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

/** The summary once `ready` holds of it: the writer appends the entries a moment after the calls. */
async function summaryOnce(tenant: Tenant, ready: (body: any) => boolean, window?: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const body = await summary(tenant, window);
    if (ready(body) || Date.now() > deadline) return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const calls = (body: any, list: string) => body[list].reduce((sum: number, entity: { calls: number }) => sum + entity.calls, 0);

/** The window's requests of one class, over every hour (a test may straddle two). */
const requestsOf = (body: any, outcome: string) => body.requests_by_hour.reduce((sum: number, hour: any) => sum + hour[outcome], 0);

/** A tenant with two open proxies to the loopback echo, `busy` called four times (two failing) and `quiet` once. */
async function proxyBurst() {
  const tenant = await seedTenant();
  const busy = await createProxy(tenant, { name: "busy", require_auth: false });
  const quiet = await createProxy(tenant, { name: "quiet", require_auth: false });
  const statuses = [];
  for (const path of ["", "", "/status/404", "/status/503"])
    statuses.push((await invoke("POST", path, { proxyKey: busy.key, body: {} })).status);
  statuses.push((await invoke("POST", "", { proxyKey: quiet.key, body: {} })).status);
  expect(statuses).toEqual([200, 200, 404, 503, 200]);
  const body = await summaryOnce(tenant, (body) => calls(body, "busiest_proxies") === 5);
  return { tenant, busy, quiet, body };
}

describe("GET /logs/summary", () => {
  it("after a burst of proxy calls: the busiest proxies with their calls and failures, and the requests by outcome class", async () => {
    const { busy, quiet, body } = await proxyBurst();
    expect(body.busiest_proxies).toEqual([
      { id: busy.id, name: "busy", calls: 4, errors: 2 },
      { id: quiet.id, name: "quiet", calls: 1, errors: 0 },
    ]);
    expect(body.busiest_reactors).toEqual([]);
    expect(requestsOf(body, "4xx")).toBe(1);
    expect(requestsOf(body, "5xx")).toBe(1);
    expect(requestsOf(body, "3xx")).toBe(0);
    // The three successful calls, the two proxies created and the tenant itself, at least (reads of the log count too).
    expect(requestsOf(body, "2xx")).toBeGreaterThanOrEqual(6);
  });

  it("lists the most recent errors, newest first, with their operation, status, trace id and entity, as the log has them", async () => {
    const { tenant, busy, body } = await proxyBurst();
    expect(body.recent_errors.map((error: any) => error.status)).toEqual([503, 404]);
    const logged = await call("GET", "/logs?entity_type=proxy", { key: tenant.managementKey });
    for (const error of body.recent_errors) {
      expect(error).toMatchObject({ operation: "invoke", entity_type: "proxy", entity_id: busy.id });
      const entry = logged.body.data.find((entry: any) => entry.trace_id === error.trace_id);
      expect(entry).toMatchObject({ status: error.status, created_at: error.created_at, operation: "invoke" });
    }
  });

  it("lists 20 errors at most, the newest", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    for (let i = 0; i < 22; i++) expect((await invoke("POST", "/status/418", { proxyKey: proxy.key, body: {} })).status).toBe(418);
    const body = await summaryOnce(tenant, (summary) => calls(summary, "busiest_proxies") === 22);
    expect(body.recent_errors).toHaveLength(20);
    expect(body.busiest_proxies).toEqual([{ id: proxy.id, name: "echo", calls: 22, errors: 22 }]);
    const times = body.recent_errors.map((error: { created_at: string }) => Date.parse(error.created_at));
    expect(times).toEqual(times.toSorted((a: number, b: number) => b - a));
  });

  it("a window is every hour of the last 24 (by default) or 168, oldest first, the current one last", async () => {
    const { tenant } = await proxyBurst();
    for (const [window, hours] of [
      [undefined, 24],
      ["24h", 24],
      ["7d", 168],
    ] as const) {
      const body = await summary(tenant, window);
      expect(body.window).toBe(window ?? "24h");
      expect(body.requests_by_hour).toHaveLength(hours);
      const starts = body.requests_by_hour.map((hour: { hour: string }) => Date.parse(hour.hour));
      expect(starts[0]).toBe(Date.parse(body.from));
      expect(starts.every((start: number, i: number) => i === 0 || start - starts[i - 1] === 3_600_000)).toBe(true);
      expect(Date.parse(body.to) - starts.at(-1)).toBeLessThan(3_600_000);
      expect(requestsOf(body, "5xx")).toBe(1);
    }
    const refused = expectProblem(await call("GET", "/logs/summary?window=30d", { key: tenant.managementKey }), 400);
    expect(JSON.stringify(refused)).toContain("window");
  });

  it("a request counts once however many tokens it used, while each use is an error entry of its trace", async () => {
    const tenant = await seedTokenTenant();
    const tokens = [
      await createToken(tenant.key, { type: "token", data: "one" }),
      await createToken(tenant.key, { type: "card_number", data: VISA }),
    ];
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: tenant.applicationId } });
    const body = { a: `{{ ${tokens[0].id} }}`, b: `{{ ${tokens[1].id} }}` };
    expect((await invoke("POST", "/status/404", { proxyKey: proxy.key, body })).status).toBe(404);
    const after = await summaryOnce(tenant, (summary) => calls(summary, "busiest_proxies") === 1);
    expect(requestsOf(after, "4xx")).toBe(1);
    expect(after.recent_errors).toHaveLength(3);
    expect(new Set(after.recent_errors.map((error: any) => error.trace_id)).size).toBe(1);
    expect(after.recent_errors.map((error: any) => error.entity_type).sort()).toEqual(["proxy", "token", "token"]);
    // Token ids are what the log names; their data never.
    const text = JSON.stringify(after);
    for (const leak of ["one", VISA, VISA.slice(-4)]) expect(text).not.toContain(leak);
  });

  it("counts reactor runs, and a failed run as an error", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(
      "module.exports = async function (req) { if (req.args.fail) throw new Error('no'); return { raw: {} }; };",
    );
    expect((await react(caller.key, reactor.id, {})).status).toBe(200);
    // An untyped throw is the reactor's fault: logged (and checked here) besides answered.
    const failed = await expectLoggedError(/The reactor threw/, () => react(caller.key, reactor.id, { fail: true }));
    expect(failed.status).toBeGreaterThanOrEqual(400);
    const body = await summaryOnce(tenant, (summary) => calls(summary, "busiest_reactors") === 2);
    expect(body.busiest_reactors).toEqual([{ id: reactor.id, name: "coded", calls: 2, errors: 1 }]);
  });

  it("a tenant sees only its own requests, proxies and errors", async () => {
    const { tenant: busyTenant } = await proxyBurst();
    const other = await seedTenant();
    const body = await summary(other);
    expect(body.busiest_proxies).toEqual([]);
    expect(body.recent_errors).toEqual([]);
    expect(requestsOf(body, "4xx") + requestsOf(body, "5xx")).toBe(0);
    expect(requestsOf(await summary(busyTenant), "5xx")).toBe(1);
  });

  it("needs log:read: a key without it gets a 403 naming it; no key, a 401", async () => {
    const tenant = await seedTenant();
    const manager = await createApplication(tenant, { type: "management", permissions: ["proxy:read"] });
    expect(expectProblem(await call("GET", "/logs/summary", { key: manager.key }), 403).detail).toContain("log:read");
    expectProblem(await call("GET", "/logs/summary"), 401);
  });

  it("moves with its tenant, and leaves nothing behind in the old database", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const proxy = await createProxy(tenant, { require_auth: false });
    expect((await invoke("POST", "/status/500", { proxyKey: proxy.key, body: {} })).status).toBe(500);
    const before = await summaryOnce(tenant, (body) => calls(body, "busiest_proxies") === 1);
    const moved = await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2" }, headers: operator });
    expect(moved.body.phase, JSON.stringify(moved.body)).toBe("done");
    const after = await summary(tenant);
    expect(after.busiest_proxies).toEqual(before.busiest_proxies);
    expect(after.recent_errors).toEqual(before.recent_errors);
    expect(requestsOf(after, "5xx")).toBe(1);
    const left = await DATA_BINDINGS.DB_1!.batch<{ n: number }>(
      ["audit_hourly", "audit_entity_hourly"].map((table) =>
        DATA_BINDINGS.DB_1!.prepare(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(tenant.tenantId),
      ),
    );
    expect(left.map((result) => result.results[0]!.n)).toEqual([0, 0]);
  });

  // Last: the cron it runs, a week ahead, drops every tenant's hours of today.
  it("the cron drops the hours no window reaches any more", async () => {
    const { tenant } = await proxyBurst();
    await runCron(Date.now() + 8 * 24 * 3_600_000);
    const body = await summary(tenant, "7d");
    expect(body.busiest_proxies).toEqual([]);
    expect(requestsOf(body, "5xx")).toBe(0);
  });
});
