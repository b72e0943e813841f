import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEPLOYMENT_TENANT } from "../../src/audit/entry";
import worker from "../../src/index";
import { logEntries, verifyLog } from "../support/audit";
import { dataDatabaseOf } from "../support/context";
import { runCron } from "../support/cron";
import { BASE } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { readReply } from "../support/reply.mjs";
import { withMethod } from "../support/substitute";
import { createToken, SSN, seedTokenTenant } from "../support/tokens";

/*
 * When the audit queue cannot take a request's entries, they go straight to audit_pending, which
 * the writer or the cron chains; when that fails too, they are written whole to the worker's log.
 * The queue failing is the one thing faked here (it cannot be made to fail locally).
 */

const failingQueue = {
  send: () => Promise.reject(new Error("Queue send failed: the queue is unavailable")),
  sendBatch: () => Promise.reject(new Error("Queue send failed: the queue is unavailable")),
} as unknown as Queue;

/** A D1 database whose audit_pending statements fail, as a database that is down would. */
function withoutAuditPending(d1: D1Database): D1Database {
  return withMethod(d1, "prepare", (sql: string) => {
    if (sql.includes("audit_pending")) throw new Error("D1_ERROR: the database is unavailable");
    return d1.prepare(sql);
  });
}

/** A D1 database whose audit_pending statements for one tenant fail: that tenant's database is down, the others' are not. */
function withoutAuditPendingOf(d1: D1Database, tenantId: string): D1Database {
  return withMethod(d1, "prepare", (sql: string) => {
    const statement = d1.prepare(sql);
    if (!sql.includes("audit_pending")) return statement;
    return withMethod(statement, "bind", (...values: unknown[]) => {
      // The tenant's id bound as a value, or inside the JSON of the rows a statement inserts.
      if (values.some((value) => String(value).includes(tenantId))) throw new Error("D1_ERROR: the database is unavailable");
      return statement.bind(...values);
    });
  });
}

async function fetchWith(bindings: Record<string, unknown>, path: string, init: RequestInit) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`${BASE}${path}`, init), { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
  return readReply(response);
}

/** A tenant with a token, whose log is written so far, and one read of the token made while the queue is down. */
async function readWhileQueueDown() {
  const tenant = await seedTokenTenant();
  const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
  await logEntries(tenant, 3);
  const traceId = `queue-down-${crypto.randomUUID()}`;
  const reply = await fetchWith({ AUDIT_QUEUE: failingQueue }, `/tokens/${token.id}`, {
    headers: { "SVC-API-KEY": tenant.key, "SVC-TRACE-ID": traceId },
  });
  expect(reply.status).toBe(200);
  return { tenant, token, traceId, d1: await dataDatabaseOf(tenant.tenantId) };
}

describe("when the audit queue cannot take entries", () => {
  it("the request succeeds, its entry waits in audit_pending, and the cron chains it", async () => {
    const { tenant, token, traceId, d1 } = await readWhileQueueDown();
    const pending = await d1.prepare("SELECT entry FROM audit_pending WHERE tenant_id = ?").bind(tenant.tenantId).all<{ entry: string }>();
    expect(pending.results.map(({ entry }) => JSON.parse(entry).trace_id)).toEqual([traceId]);

    await runCron();
    expect((await d1.prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ?").bind(tenant.tenantId).first())!.n).toBe(0);
    const entries = await logEntries(tenant, 2, { entity_type: "token" });
    expect(entries.filter((entry) => entry.trace_id === traceId)).toMatchObject([{ operation: "read", entity_id: token.id, status: 200 }]);
    expect((await verifyLog(tenant)).verified).toBe(true);
  });

  it("the next entries the writer appends for the tenant take the waiting ones along", async () => {
    const { tenant, token, traceId, d1 } = await readWhileQueueDown();
    // An ordinary request: its entry goes through the queue, and the writer chains the waiting one with it.
    expect((await fetchWith({}, `/tokens/${token.id}`, { headers: { "SVC-API-KEY": tenant.key } })).status).toBe(200);
    const entries = await logEntries(tenant, 3, { entity_type: "token" });
    expect(entries.filter((entry) => entry.trace_id === traceId)).toHaveLength(1);
    expect((await d1.prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ?").bind(tenant.tenantId).first())!.n).toBe(0);
    expect((await verifyLog(tenant)).verified).toBe(true);
  });

  it("an entry kept waiting that the queue also delivered is chained once, and the log goes on", async () => {
    const { tenant, traceId, d1 } = await readWhileQueueDown();
    const pending = await d1
      .prepare("SELECT * FROM audit_pending WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<Record<string, unknown>>();
    // A send that failed after the queue took the entry: the queue writes it, and it is kept waiting too.
    await d1.prepare("DELETE FROM audit_pending WHERE tenant_id = ?").bind(tenant.tenantId).run();
    await env.AUDIT_QUEUE.send(JSON.parse(pending!.entry as string), { contentType: "json" });
    await logEntries(tenant, 2, { entity_type: "token" });
    const columns = Object.keys(pending!);
    await d1
      .prepare(`INSERT INTO audit_pending (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`)
      .bind(...Object.values(pending!))
      .run();
    await runCron();
    const entries = await logEntries(tenant, 2, { entity_type: "token" });
    expect(entries.filter((entry) => entry.trace_id === traceId)).toHaveLength(1);
    expect((await d1.prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ?").bind(tenant.tenantId).first())!.n).toBe(0);
    // The writer is not stuck on it: the next request's entry is chained too.
    expect((await fetchWith({}, "/tokens", { headers: { "SVC-API-KEY": tenant.key } })).status).toBe(200);
    expect(await logEntries(tenant, entries.length + 1, { entity_type: "token" })).toHaveLength(entries.length + 1);
    expect((await verifyLog(tenant)).verified).toBe(true);
  }, 30_000);

  it("entries of concurrent requests of two tenants each wait in their own tenant's audit_pending", async () => {
    const tenants = [await seedTokenTenant(), await seedTokenTenant()];
    const tokens = await Promise.all(tenants.map((owner) => createToken(owner.key, { type: "social_security_number", data: SSN })));
    const traceIds = tenants.map(() => `queue-down-${crypto.randomUUID()}`);
    const replies = await Promise.all(
      tenants.map((owner, i) =>
        fetchWith({ AUDIT_QUEUE: failingQueue }, `/tokens/${tokens[i]!.id}`, {
          headers: { "SVC-API-KEY": owner.key, "SVC-TRACE-ID": traceIds[i]! },
        }),
      ),
    );
    expect(replies.map((reply) => reply.status)).toEqual([200, 200]);
    for (const [i, owner] of tenants.entries()) {
      const d1 = await dataDatabaseOf(owner.tenantId);
      const pending = await d1.prepare("SELECT entry FROM audit_pending WHERE tenant_id = ?").bind(owner.tenantId).all<{ entry: string }>();
      expect(pending.results.map(({ entry }) => JSON.parse(entry).trace_id)).toEqual([traceIds[i]]);
    }
  });

  it("a send the queue never settles counts as failed after 10 s, and its entry waits in audit_pending", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const traceId = `queue-hangs-${crypto.randomUUID()}`;
    const hangingQueue = { send: () => new Promise(() => {}), sendBatch: () => new Promise(() => {}) };
    const reply = await fetchWith({ AUDIT_QUEUE: hangingQueue }, `/tokens/${token.id}`, {
      headers: { "SVC-API-KEY": tenant.key, "SVC-TRACE-ID": traceId },
    });
    expect(reply.status).toBe(200);
    const d1 = await dataDatabaseOf(tenant.tenantId);
    const pending = await d1.prepare("SELECT entry FROM audit_pending WHERE tenant_id = ?").bind(tenant.tenantId).all<{ entry: string }>();
    expect(pending.results.map(({ entry }) => JSON.parse(entry).trace_id)).toEqual([traceId]);
  }, 20_000);

  it("one tenant's audit_pending failing keeps neither the entries after it from theirs nor its own from the worker's log", async () => {
    const [down, up] = [await seedTokenTenant(), await seedTokenTenant()];
    const tokens = await Promise.all([down, up].map((owner) => createToken(owner.key, { type: "social_security_number", data: SSN })));
    const traceIds = [`spill-down-${crypto.randomUUID()}`, `spill-up-${crypto.randomUUID()}`];
    const bindings = {
      AUDIT_QUEUE: failingQueue,
      ...Object.fromEntries(["DB", "DB_1", "DB_2"].map((name) => [name, withoutAuditPendingOf(env[name as "DB"], down.tenantId)])),
    };
    // The failing tenant's entry first, the other's in the same send: answered one after the other,
    // well within the send's window, and both waited for together.
    await expectLoggedError(new RegExp(`audit: unrecorded entry .*"trace_id":"${traceIds[0]}"`), async () => {
      const contexts = [createExecutionContext(), createExecutionContext()];
      for (const [i, owner] of [down, up].entries()) {
        const request = new Request(`${BASE}/tokens/${tokens[i]!.id}`, {
          headers: { "SVC-API-KEY": owner.key, "SVC-TRACE-ID": traceIds[i]! },
        });
        expect((await worker.fetch(request, { ...env, ...bindings }, contexts[i]!)).status).toBe(200);
      }
      await Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx)));
    });
    const d1 = await dataDatabaseOf(up.tenantId);
    const pending = await d1.prepare("SELECT entry FROM audit_pending WHERE tenant_id = ?").bind(up.tenantId).all<{ entry: string }>();
    expect(pending.results.map(({ entry }) => JSON.parse(entry).trace_id)).toEqual([traceIds[1]]);
  });

  it("when audit_pending cannot take them either, the entry is written whole to the worker's log, and the answer stands", async () => {
    const traceId = `both-down-${crypto.randomUUID()}`;
    const key = "key_unknown-0123456789abcdefghij";
    const reply = await expectLoggedError(new RegExp(`audit: unrecorded entry .*"trace_id":"${traceId}"`), () =>
      fetchWith({ AUDIT_QUEUE: failingQueue, DB: withoutAuditPending(env.DB) }, "/tokens", {
        headers: { "SVC-API-KEY": key, "SVC-TRACE-ID": traceId },
      }),
    );
    expect(reply.status).toBe(401);
    const row = await env.DB.prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ?").bind(DEPLOYMENT_TENANT).first();
    expect(row!.n).toBe(0);
  });
});
