/**
 * The audit log's hourly rollup (audit_hourly, audit_entity_hourly), which GET /logs/summary reads
 * instead of the log. The writer adds each chunk's counts in the batch that appends the chunk, so a
 * count is there exactly when its entries are; moves copy the rollup with the chain and purge it with
 * the log, and the cron drops the hours no window reaches any more.
 */
import type { AuditEntry } from "./entry";

export const HOUR_MS = 3_600_000;

/** The longest window the summary shows, in hours (7 days): older hours are dropped. */
export const KEPT_HOURS = 7 * 24;

/** The outcome class of a status: 2 (2xx, and the rare 1xx), 3, 4 or 5. */
export function outcomeOf(status: number): number {
  return Math.min(5, Math.max(2, Math.floor(status / 100)));
}

/** Entries that are a call of a proxy or a run of a reactor (an async one once it ran), by the entity they name. */
function callOf(entry: AuditEntry): { entityType: "proxy" | "reactor"; entityId: string } | null {
  if (entry.entity_id === null) return null;
  if (entry.entity_type === "proxy" && entry.operation === "invoke") return { entityType: "proxy", entityId: entry.entity_id };
  if (entry.entity_type === "reactor" && entry.operation === "react") return { entityType: "reactor", entityId: entry.entity_id };
  return null;
}

/** The statements adding the entries' counts to the tenant's rollup, to run in the batch that appends them (none when they count nothing). */
export function rollupStatements(d1: D1Database, tenantId: string, entries: AuditEntry[]): D1PreparedStatement[] {
  const requests = new Map<string, [number, number, number]>();
  const calls = new Map<string, [string, number, string, number, number]>();
  for (const entry of entries) {
    const hour = Math.floor(entry.created_at / HOUR_MS) * HOUR_MS;
    if (entry.request) {
      const outcome = outcomeOf(entry.status);
      const row = requests.get(`${hour}/${outcome}`) ?? [hour, outcome, 0];
      row[2] += 1;
      requests.set(`${hour}/${outcome}`, row);
    }
    const call = callOf(entry);
    if (call) {
      const key = JSON.stringify([call.entityType, hour, call.entityId]);
      const row = calls.get(key) ?? [call.entityType, hour, call.entityId, 0, 0];
      row[3] += 1;
      row[4] += entry.status >= 400 ? 1 : 0;
      calls.set(key, row);
    }
  }
  return [
    ...(requests.size > 0 ? [d1.prepare(ADD_REQUESTS).bind(tenantId, JSON.stringify([...requests.values()]))] : []),
    ...(calls.size > 0 ? [d1.prepare(ADD_CALLS).bind(tenantId, JSON.stringify([...calls.values()]))] : []),
  ];
}

// `WHERE true`: SQLite reads ON CONFLICT after a SELECT only behind a WHERE.
const ADD_REQUESTS = `INSERT INTO audit_hourly (tenant_id, hour, outcome, requests)
  SELECT ?1, value ->> '$[0]', value ->> '$[1]', value ->> '$[2]' FROM json_each(?2) WHERE true
  ON CONFLICT (tenant_id, hour, outcome) DO UPDATE SET requests = requests + excluded.requests`;

const ADD_CALLS = `INSERT INTO audit_entity_hourly (tenant_id, entity_type, hour, entity_id, calls, errors)
  SELECT ?1, value ->> '$[0]', value ->> '$[1]', value ->> '$[2]', value ->> '$[3]', value ->> '$[4]' FROM json_each(?2) WHERE true
  ON CONFLICT (tenant_id, entity_type, hour, entity_id) DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors`;

/** Rows of hours before `hour` one cron run drops per table and database. */
const PURGE_ROWS = 5_000;

/** Drops the rollup's hours before `hour`, every tenant's (the cron): no window reaches them. */
export async function purgeRollupBefore(d1: D1Database, hour: number): Promise<void> {
  await d1.batch(
    ["audit_hourly", "audit_entity_hourly"].map((table) =>
      d1.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE hour < ? LIMIT ?)`).bind(hour, PURGE_ROWS),
    ),
  );
}
