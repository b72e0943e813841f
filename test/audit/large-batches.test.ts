import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AuditEntry, AuditMessage } from "../../src/audit/entry";
import worker from "../../src/index";
import { verifyLog } from "../support/audit";
import { dataDatabaseOf } from "../support/context";
import { runCron } from "../support/cron";
import { call } from "../support/harness";
import { withMethod } from "../support/substitute";
import { seedTokenTenant } from "../support/tokens";

/*
 * Under load one queue batch can carry thousands of a tenant's entries, megabytes of them: more
 * than one D1 statement may carry (a value is at most 2 MB). The writer, the dead-letter consumer
 * and the cron write them chunk by chunk, each chunk chained after the last; every entry is in the
 * log once and the chain verifies. The batches go through the worker's own queue handler.
 */

/** `count` entries of the tenant's, as requests record them, each with a message of about 1 KB. */
function entriesFor(tenantId: string, count: number): AuditEntry[] {
  return Array.from({ length: count }, (_, i) => ({
    id: crypto.randomUUID(),
    tenant_id: tenantId,
    actor_id: "application-under-load",
    actor_type: "application" as const,
    credential_id: null,
    entity_type: "token" as const,
    entity_id: `token-${i}`,
    operation: "use",
    message: `Detokenized for a proxy call ${i}: ${"x".repeat(1_000)}`,
    status: 200,
    trace_id: `load-${i}`,
    created_at: Date.now(),
  }));
}

/** The entries in messages of about 100 KB, as the recorder sends them. */
function messagesOf(entries: AuditEntry[]): AuditMessage[] {
  const messages: AuditMessage[] = [];
  for (let start = 0; start < entries.length; start += 70) messages.push(entries.slice(start, start + 70));
  return messages;
}

/** Hands the messages to the worker's queue handler as one batch of `queue`, and answers what it acknowledged and retried. */
async function consume(queue: string, messages: AuditMessage[], bindings: Record<string, unknown> = {}, attempts = 1) {
  const batch = createMessageBatch<AuditMessage>(
    queue,
    messages.map((body, i) => ({ id: `message-${i}`, timestamp: new Date(), attempts, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...bindings }, ctx);
  return getQueueResult(batch, ctx);
}

/** How many times each of the entries is in the tenant's log, by id (absent: never). */
async function timesLogged(d1: D1Database, tenantId: string, entries: AuditEntry[]): Promise<Map<string, number>> {
  const { results } = await d1
    .prepare("SELECT id, count(*) AS n FROM audit_log WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?)) GROUP BY id")
    .bind(tenantId, JSON.stringify(entries.map(({ id }) => id)))
    .all<{ id: string; n: number }>();
  return new Map(results.map(({ id, n }) => [id, n]));
}

function expectEachOnce(logged: Map<string, number>, entries: AuditEntry[]): void {
  expect(logged.size).toBe(entries.length);
  expect(new Set(logged.values())).toEqual(new Set([1]));
}

async function pendingCount(d1: D1Database, tenantId: string): Promise<number> {
  const row = await d1.prepare("SELECT count(*) AS n FROM audit_pending WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>();
  return row!.n;
}

/** The bindings with every database's audit_log inserts failing from the `failFrom`-th on, as a database that goes down part-way would. */
function insertsFailingFrom(failFrom: number): Record<string, D1Database> {
  let inserts = 0;
  const failing = (d1: D1Database) =>
    withMethod(d1, "prepare", (sql: string) => {
      if (!sql.startsWith("INSERT INTO audit_log")) return d1.prepare(sql);
      inserts += 1;
      return d1.prepare(inserts >= failFrom ? sql.replace("INSERT INTO audit_log", "INSERT INTO audit_log_unavailable") : sql);
    });
  return { DB: failing(env.DB), DB_1: failing(env.DB_1), DB_2: failing(env.DB_2) };
}

describe("a batch larger than one statement carries", () => {
  it("the writer chains a tenant's 5 MB of entries chunk by chunk: each entry once, the chain verified, a redelivery adding none", async () => {
    const tenant = await seedTokenTenant();
    const entries = entriesFor(tenant.tenantId, 4_000);
    const messages = messagesOf(entries);

    const result = await consume("token-vault-audit", messages);
    expect(result.retryMessages).toEqual([]);
    expect(result.explicitAcks).toHaveLength(messages.length);
    const d1 = await dataDatabaseOf(tenant.tenantId);
    expectEachOnce(await timesLogged(d1, tenant.tenantId, entries), entries);
    expect(await verifyLog(tenant)).toMatchObject({ verified: true, complete: true, broken_at: null });

    // The queue delivers at least once: the same batch again is acknowledged and writes nothing.
    const again = await consume("token-vault-audit", messages, {}, 2);
    expect(again.explicitAcks).toHaveLength(messages.length);
    expectEachOnce(await timesLogged(d1, tenant.tenantId, entries), entries);
  }, 120_000);

  it("a chunk that fails leaves the chunks before it chained, and the retry chains the rest once", async () => {
    const tenant = await seedTokenTenant();
    const entries = entriesFor(tenant.tenantId, 3_000);
    const messages = messagesOf(entries);
    const d1 = await dataDatabaseOf(tenant.tenantId);

    // The third append fails: the batch is retried, and what the first two appended stays, chained.
    const failed = await consume("token-vault-audit", messages, insertsFailingFrom(3));
    expect(failed.retryMessages).toHaveLength(messages.length);
    const partly = await timesLogged(d1, tenant.tenantId, entries);
    expect(partly.size).toBeGreaterThan(0);
    expect(partly.size).toBeLessThan(entries.length);
    expect(new Set(partly.values())).toEqual(new Set([1]));
    expect((await verifyLog(tenant)).verified).toBe(true);

    const retried = await consume("token-vault-audit", messages, {}, 2);
    expect(retried.retryMessages).toEqual([]);
    expectEachOnce(await timesLogged(d1, tenant.tenantId, entries), entries);
    expect(await verifyLog(tenant)).toMatchObject({ verified: true, complete: true, broken_at: null });
  }, 120_000);

  it("the dead-letter consumer keeps 3 MB of a tenant's entries in audit_pending, and one cron run chains them all", async () => {
    const tenant = await seedTokenTenant();
    const entries = entriesFor(tenant.tenantId, 2_500);
    const messages = messagesOf(entries);
    const d1 = await dataDatabaseOf(tenant.tenantId);

    const kept = await consume("token-vault-audit-dead", messages);
    expect(kept.retryMessages).toEqual([]);
    expect(kept.explicitAcks).toHaveLength(messages.length);
    expect(await pendingCount(d1, tenant.tenantId)).toBe(entries.length);
    // The verification says what waits, so an operator can tell an entry not chained yet from one lost.
    expect((await verifyLog(tenant)).pending).toBe(entries.length);

    await runCron();
    expect(await pendingCount(d1, tenant.tenantId)).toBe(0);
    expectEachOnce(await timesLogged(d1, tenant.tenantId, entries), entries);
    expect(await verifyLog(tenant)).toMatchObject({ verified: true, complete: true, broken_at: null, pending: 0 });
  }, 120_000);

  it("a verification longer than one call goes on with after_seq where the last call left, though entries chained late carry an earlier created_at", async () => {
    const tenant = await seedTokenTenant();
    // Entries that waited (in audit_pending, during a queue outage) are chained after newer ones.
    // The first call stops among those that waited, whatever few entries the tenant's setup logged.
    const recent = entriesFor(tenant.tenantId, 19_990);
    const waited = entriesFor(tenant.tenantId, 200).map((entry) => ({ ...entry, created_at: Date.now() - 3_600_000 }));
    const later = entriesFor(tenant.tenantId, 100);
    const result = await consume("token-vault-audit", messagesOf([...recent, ...waited, ...later]));
    expect(result.retryMessages).toEqual([]);

    const first = await verifyLog(tenant);
    expect(first).toMatchObject({ verified: true, complete: false });
    const second = await verifyLog(tenant, { after_seq: String(first.last_seq) });
    expect(second).toMatchObject({ verified: true, complete: true, first_seq: first.last_seq! + 1, last_seq: second.head_seq });
    // A date cannot say where to go on: from the created_at of the first entry not checked, the call starts over.
    const d1 = await dataDatabaseOf(tenant.tenantId);
    const next = await d1
      .prepare("SELECT created_at FROM audit_log WHERE tenant_id = ? AND seq = ?")
      .bind(tenant.tenantId, first.last_seq! + 1)
      .first<{ created_at: number }>();
    const byDate = await verifyLog(tenant, { start_date: new Date(next!.created_at).toISOString() });
    expect(byDate.first_seq).toBeLessThan(first.last_seq!);
    const both = await call("GET", `/logs/verify?after_seq=1&start_date=${new Date().toISOString()}`, { key: tenant.managementKey });
    expect(both.status).toBe(400);
    expect(both.body.errors).toHaveProperty("after_seq");
  }, 120_000);
});
