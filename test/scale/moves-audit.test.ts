import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type LogEntry, logEntries, verifyLog } from "../support/audit";
import { DATA_BINDINGS } from "../support/context";
import { call } from "../support/harness";
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
});
