import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { logsAfter } from "../../src/audit/storage";
import { databaseOf } from "../../src/db/client";

/**
 * GET /logs as SQLite plans it (EXPLAIN QUERY PLAN on the real schema): a cursor page filtered by actor
 * or by operation reads one range of that filter's index in the list's order (created_at, seq
 * descending), so it stops after the page's entries: no walk of the tenant's log, no sort. So does
 * one filtered by entity id or by entity type (the console's Entity filters): an entity that is rare
 * in the log must not make a page walk the tenant's whole log by time looking for its entries.
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

  it("filtered by entity id, with or without its type, a page is one range of audit_log_tenant_entity, in order", async () => {
    for (const filter of [{ entityId: crypto.randomUUID() }, { entityType: "token", entityId: crypto.randomUUID() }]) {
      const plan = await planOf(filter);
      expect(plan, JSON.stringify(filter)).toMatch(
        /SEARCH audit_log USING INDEX audit_log_tenant_entity \(tenant_id=\? AND entity_id=\? AND/,
      );
      expect(plan, JSON.stringify(filter)).not.toMatch(/TEMP B-TREE|SCAN/);
    }
  });

  it("filtered by entity type, a page is one range of audit_log_tenant_entity_type, in order", async () => {
    const plan = await planOf({ entityType: "proxy", startDate: 0 });
    expect(plan).toMatch(/SEARCH audit_log USING INDEX audit_log_tenant_entity_type \(tenant_id=\? AND entity_type=\? AND/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  });

  it("filtered by entity type beside an actor, an operation or an entity id, it reads that narrower filter's range", async () => {
    const filters = {
      audit_log_tenant_actor: { actorId: crypto.randomUUID(), entityType: "token" },
      audit_log_tenant_operation: { operation: "read", entityType: "token", startDate: 0 },
      audit_log_tenant_entity: { entityId: crypto.randomUUID(), entityType: "token", actorId: crypto.randomUUID(), operation: "read" },
    };
    for (const [index, filter] of Object.entries(filters)) {
      const plan = await planOf(filter);
      expect(plan, index).toMatch(new RegExp(`SEARCH audit_log USING INDEX ${index} \\(`));
      expect(plan, index).not.toMatch(/TEMP B-TREE|SCAN/);
    }
  });
});

describe("GET /logs's work, as D1 counts the rows a cursor page reads", () => {
  const tenantId = crypto.randomUUID();
  const ENTRIES = 10_000;
  const PAGE = 21;

  /**
   * A log of 10,000 entries, too many to make through the API: a token read by one application each,
   * but for the oldest two, about a proxy that is rare in the log. Only the columns the filters read
   * matter here, so the chain's hashes are placeholders.
   */
  beforeAll(async () => {
    await env.DB.prepare(
      `INSERT INTO audit_log (tenant_id, seq, id, actor_id, actor_type, credential_id, entity_type, entity_id, operation, message,
         status, trace_id, created_at, hash)
       WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ?2)
       SELECT ?1, x, 'entry-' || x, 'application', 'application', NULL, iif(x <= 2, 'proxy', 'token'),
         iif(x <= 2, 'rare', 'token-' || (x % 100)), 'read', 'read', 200, 'trace', ?3 + x, 'hash' FROM n`,
    )
      .bind(tenantId, ENTRIES, AFTER.createdAt - ENTRIES)
      .run();
  });

  async function rowsRead(filter: Parameters<typeof logsAfter>[2]): Promise<number> {
    const { sql, params } = logsAfter(databaseOf(env), tenantId, filter, AFTER, PAGE).toSQL();
    const { meta } = await env.DB.prepare(sql)
      .bind(...params)
      .all();
    return meta.rows_read;
  }

  it("a page after the newest entries reads about a page of entries, whatever the filter, a rare entity's included", async () => {
    const filters = {
      none: {},
      dates: { startDate: 0, endDate: AFTER.createdAt },
      actor: { actorId: "application" },
      operation: { operation: "read" },
      "entity id": { entityId: "rare" },
      "entity type and id": { entityType: "proxy", entityId: "rare" },
      "entity type": { entityType: "proxy" },
      "actor and entity type": { actorId: "application", entityType: "token" },
    };
    for (const [name, filter] of Object.entries(filters)) expect(await rowsRead(filter), name).toBeLessThanOrEqual(3 * PAGE);
  });
});
