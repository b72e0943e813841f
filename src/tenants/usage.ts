/**
 * The tenant's usage report (GET /tenants/self/reports/usage), read from token_counts and
 * container_counts: triggers on tokens keep them (migrations/0024_token_counts.sql), so a report
 * reads one row per type and per container, never the tokens themselves.
 */
import { asc, eq } from "drizzle-orm";
import type { TenantContext } from "../context";
import { containerCounts, tokenCounts } from "../db/data-tables";
import { isoTime } from "../http/schemas";
import { REPORTED_CONTAINERS, type UsageReport } from "./schema";

export async function usageReport(context: TenantContext): Promise<UsageReport> {
  const { db, tenantId } = context;
  const [types, containers] = await db.batch([
    db.select().from(tokenCounts).where(eq(tokenCounts.tenantId, tenantId)),
    db
      .select({ container: containerCounts.container, count: containerCounts.count })
      .from(containerCounts)
      .where(eq(containerCounts.tenantId, tenantId))
      .orderBy(asc(containerCounts.container))
      .limit(REPORTED_CONTAINERS + 1),
  ]);
  context.audit.describe({ entityId: tenantId });
  const total = types.reduce((sum, row) => sum + row.count, 0);
  return {
    token_report: {
      total_tokens: total,
      metrics_by_type: Object.fromEntries(
        types.map((row) => [row.type, { count: row.count, last_created_at: isoTime(row.lastCreatedAt)! }]),
      ),
      metrics_by_container: Object.fromEntries(
        containers.slice(0, REPORTED_CONTAINERS).map((row) => [row.container, { count: row.count }]),
      ),
      metrics_by_container_complete: containers.length <= REPORTED_CONTAINERS,
    },
    total_tokens: total,
  };
}
