import { createExecutionContext, createMessageBatch, env, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AuditEntry, AuditMessage } from "../../src/audit/entry";
import worker from "../../src/index";
import { type LogEntry, logEntries, verifyLog } from "../support/audit";
import { callConfigured } from "../support/configured";
import { DATA_BINDINGS } from "../support/context";
import { runCron } from "../support/cron";
import { BASE, call } from "../support/harness";
import { withMethod } from "../support/substitute";
import { createToken, seedTokenTenantIn } from "../support/tokens";

/* A moved tenant keeps its audit log: every entry, the chain that links them, and where it goes on. */

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

async function auditRows(database: string, tenantId: string): Promise<number> {
  const d1 = DATA_BINDINGS[database]!;
  const counts = await d1.batch(
    ["audit_log", "audit_chains", "audit_pending"].map((table) =>
      d1.prepare(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(tenantId),
    ),
  );
  return counts.reduce((sum, { results }) => sum + (results[0] as { n: number }).n, 0);
}

const ids = (entries: LogEntry[]) => entries.map((entry) => entry.id);

describe("moving a tenant with its audit log", () => {
  it("copies every entry and the chain, which verifies and goes on in the new database", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const token = await createToken(tenant.key, { type: "token", data: "audited" });
    for (let i = 0; i < 3; i++) await call("GET", `/tokens/${token.id}`, { key: tenant.key });
    const before = await logEntries(tenant, 6);
    // Moved in steps of one batch, so the audit log is copied across calls too.
    for (;;) {
      const reply = await call("POST", `/tenants/${tenant.tenantId}/move`, {
        body: { database: "DB_2", max_batches: 1 },
        headers: operator,
      });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      if (reply.body.phase === "done") break;
    }
    expect(await auditRows("DB_1", tenant.tenantId)).toBe(0);
    await call("GET", `/tokens/${token.id}`, { key: tenant.key });
    const after = await logEntries(tenant, before.length + 2);
    expect(ids(after).slice(0, before.length)).toEqual(ids(before));
    expect(after.map((entry) => entry.operation)).toContain("move");
    const verification = await verifyLog(tenant);
    expect(verification).toMatchObject({ verified: true, first_seq: 1 });
    expect(verification.checked).toBe(verification.head_seq);
  }, 30_000);

  it("loses and doubles no entry of requests made while the move runs", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const token = await createToken(tenant.key, { type: "token", data: "busy" });
    let moving = true;
    const traces: string[] = [];
    const reader = (async () => {
      for (let i = 0; moving || i < 3; i++) {
        const traceId = `during-move-${crypto.randomUUID()}`;
        const reply = await call("GET", `/tokens/${token.id}`, { key: tenant.key, headers: { "SVC-TRACE-ID": traceId } });
        expect(reply.status).toBe(200);
        traces.push(traceId);
      }
    })();
    const moved = await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2" }, headers: operator });
    moving = false;
    await reader;
    expect(moved.body.phase).toBe("done");
    // Entries held back during the switch are delivered again by the queue a moment later.
    const entries = await logEntries(tenant, traces.length + 1, { entity_type: "token" }, 30_000);
    for (const traceId of traces)
      expect(
        entries.filter((entry) => entry.trace_id === traceId),
        traceId,
      ).toHaveLength(1);
    expect(new Set(ids(entries)).size).toBe(entries.length);
    expect(await auditRows("DB_1", tenant.tenantId)).toBe(0);
    expect((await verifyLog(tenant)).verified).toBe(true);
  }, 60_000);

  it("loses no entry of a queue batch whose writer began before the move and wrote its last chunks after the switch", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    // About 3 MB: the writer appends it in several chunks, each a round trip of its own.
    const entries: AuditEntry[] = Array.from({ length: 3_000 }, (_, i) => ({
      id: crypto.randomUUID(),
      tenant_id: tenant.tenantId,
      actor_id: "application-under-load",
      actor_type: "application" as const,
      credential_id: null,
      entity_type: "token" as const,
      entity_id: `token-${i}`,
      operation: "use",
      message: `Detokenized ${i}: ${"x".repeat(1_000)}`,
      status: 200,
      trace_id: `load-${i}`,
      created_at: Date.now(),
    }));
    const messages: AuditMessage[] = [];
    for (let start = 0; start < entries.length; start += 70) messages.push(entries.slice(start, start + 70));
    // The writer is slow once its first chunk is in: the move runs whole before its next chunk.
    let batches = 0;
    let firstChunkIn!: () => void;
    const chunkIn = new Promise<void>((resolve) => {
      firstChunkIn = resolve;
    });
    let moveDone!: () => void;
    const moved = new Promise<void>((resolve) => {
      moveDone = resolve;
    });
    // (Each chunk is two batches: the chain's state read, then the append.)
    const slow = withMethod(env.DB_1, "batch", (async (statements: D1PreparedStatement[]) => {
      const result = await env.DB_1.batch(statements);
      batches += 1;
      if (batches === 2) {
        firstChunkIn();
        await moved;
      }
      return result;
    }) as D1Database["batch"]);
    const batch = createMessageBatch<AuditMessage>(
      "token-vault-audit",
      messages.map((body, i) => ({ id: `message-${i}`, timestamp: new Date(), attempts: 1, body })),
    );
    const ctx = createExecutionContext();
    const bindings: Record<string, unknown> = { DB_1: slow };
    const writing = worker.queue(batch, { ...env, ...bindings }, ctx);

    await chunkIn;
    for (let call = 0; ; call++) {
      const reply = await callConfigured({ CREDENTIAL_CACHE_TTL_MS: "0" }, "POST", `/tenants/${tenant.tenantId}/move`, {
        body: { database: "DB_2" },
        headers: operator,
      });
      if (reply.status === 200 && reply.body.phase === "done") break;
      expect(call, JSON.stringify(reply.body)).toBeLessThan(5);
    }
    moveDone();
    await writing;
    const result = await getQueueResult(batch, ctx);

    // What the writer acknowledged is in the tenant's log where the tenant now lives; none of it is left behind.
    const acknowledged = new Set(result.explicitAcks);
    const { results } = await env.DB_2.prepare(
      "SELECT count(*) AS n FROM audit_log WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))",
    )
      .bind(tenant.tenantId, JSON.stringify(entries.map(({ id }) => id)))
      .all<{ n: number }>();
    const ackedEntries = messages.filter((_, i) => acknowledged.has(`message-${i}`)).flat().length;
    expect(results[0]!.n).toBeGreaterThanOrEqual(ackedEntries);
    expect(await auditRows("DB_1", tenant.tenantId)).toBe(0);
    expect(await verifyLog(tenant)).toMatchObject({ verified: true, broken_at: null });
  }, 60_000);

  it("keeps the entries of a tenant still moving when the dead-letter queue delivers them for the last time", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    await createToken(tenant.key, { type: "token", data: "read while moving" });
    expect(
      (await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2", max_batches: 1 }, headers: operator })).body
        .phase,
    ).toBe("blocked");
    // Reads go on while writes are blocked, and are audited; their entries wait for the move.
    const entry: AuditEntry = {
      id: crypto.randomUUID(),
      tenant_id: tenant.tenantId,
      actor_id: tenant.applicationId,
      actor_type: "application",
      credential_id: null,
      entity_type: "token",
      entity_id: "read-while-moving",
      operation: "read",
      message: "Read token",
      status: 200,
      trace_id: "read-while-moving",
      created_at: Date.now(),
    };
    // wrangler.toml: the dead-letter consumer has max_retries = 20 and no queue after it. A retry of
    // its 21st delivery is dropped by Queues: the entry would be lost without a word.
    const batch = createMessageBatch<AuditMessage>("token-vault-audit-dead", [
      { id: "last-delivery", timestamp: new Date(), attempts: 21, body: [entry] },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages, "the last delivery is not retried: Queues would drop it").toEqual([]);

    for (;;) {
      const reply = await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2" }, headers: operator });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      if (reply.body.phase === "done") break;
    }
    await runCron();
    const logged = await env.DB_2.prepare("SELECT count(*) AS n FROM audit_log WHERE tenant_id = ? AND id = ?")
      .bind(tenant.tenantId, entry.id)
      .first<{ n: number }>();
    expect(logged!.n).toBe(1);
  }, 30_000);
  it("keeps the entry of a read made while the tenant moves and the queue is down, and chains it in the new database after the move", async () => {
    const tenant = await seedTokenTenantIn("DB_1");
    const token = await createToken(tenant.key, { type: "token", data: "read while moving" });
    expect(
      (await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2", max_batches: 1 }, headers: operator })).body
        .phase,
    ).toBe("blocked");
    const failingQueue = {
      send: () => Promise.reject(new Error("queue down")),
      sendBatch: () => Promise.reject(new Error("queue down")),
    } as unknown as Queue;
    const traceId = `spilled-while-moving-${crypto.randomUUID()}`;
    const ctx = createExecutionContext();
    const response = await worker.fetch(
      new Request(`${BASE}/tokens/${token.id}`, { headers: { "SVC-API-KEY": tenant.key, "SVC-TRACE-ID": traceId } }),
      { ...env, AUDIT_QUEUE: failingQueue },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(200);
    // Neither the source's audit_pending (copied, then purged) nor the target's (replaced by the copy).
    const waiting = (d1: D1Database) =>
      d1
        .prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ? AND entry ->> 'trace_id' = ?")
        .bind(tenant.tenantId, traceId)
        .first<{ n: number }>();
    expect((await waiting(env.DB))!.n).toBe(1);

    for (;;) {
      const reply = await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2" }, headers: operator });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      if (reply.body.phase === "done") break;
    }
    await runCron();
    const logged = await env.DB_2.prepare("SELECT count(*) AS n FROM audit_log WHERE tenant_id = ? AND trace_id = ?")
      .bind(tenant.tenantId, traceId)
      .first<{ n: number }>();
    expect(logged!.n).toBe(1);
    expect((await waiting(env.DB))!.n).toBe(0);
    expect((await verifyLog(tenant)).verified).toBe(true);
  }, 30_000);
});
