import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { logsAfter } from "../../src/audit/storage";
import { databaseOf } from "../../src/db/client";

/**
 * GET /logs as SQLite plans it (EXPLAIN QUERY PLAN on the real schema): a cursor page filtered by actor
 * or by operation reads one range of that filter's index in the list's order (created_at, seq
 * descending), so it stops after the page's entries: no walk of the tenant's log, no sort.
 */

const TENANT = "7c0d6a4e-2b1f-4f3a-9e8d-1a2b3c4d5e6f";
const AFTER = { createdAt: Date.UTC(2026, 0, 1), seq: 1_000 };

async function planOf(filter: Parameters<typeof logsAfter>[2]): Promise<string> {
  const { sql, params } = logsAfter(databaseOf(env), TENANT, filter, AFTER, 21).toSQL();
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return results.map((row) => row.detail).join("\n");
}

describe("GET /logs's query plans", () => {
  it("filtered by actor, a page is one range of audit_log_tenant_actor, in order", async () => {
    const plan = await planOf({ actorId: crypto.randomUUID() });
    expect(plan).toMatch(/SEARCH audit_log USING INDEX audit_log_tenant_actor \(tenant_id=\? AND actor_id=\? AND/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  });

  it("filtered by operation, a page is one range of audit_log_tenant_operation, in order", async () => {
    const plan = await planOf({ operation: "read" });
    expect(plan).toMatch(/SEARCH audit_log USING INDEX audit_log_tenant_operation \(tenant_id=\? AND operation=\? AND/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  });

  it("filtered by actor and operation with dates, it still reads one index range without a sort", async () => {
    const plan = await planOf({ actorId: crypto.randomUUID(), operation: "read", startDate: 0, endDate: Date.now() });
    expect(plan).toMatch(/SEARCH audit_log USING INDEX audit_log_tenant_(actor|operation) \(tenant_id=\? AND (actor_id|operation)=\? AND/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  });
});
