/**
 * GET /logs/summary: what the vault did for the tenant over the last 24 hours or 7 days. Hours and
 * the busiest proxies and reactors come from the rollup (rollup.ts), whose rows are one per hour and
 * class or entity; recent errors are the newest entries on audit_log_tenant_errors, a partial index
 * of failures only. Nothing reads the log's successes, so a page view costs the same however busy
 * the tenant is.
 */
import type { TenantContext } from "../context";
import { isoTime } from "../http/schemas";
import { AUDIT } from "../limits";
import { HOUR_MS, outcomeOf } from "./rollup";
import { SUMMARY_WINDOWS, type Summary } from "./schema";

type Window = keyof typeof SUMMARY_WINDOWS;

export async function summarizeLogs(context: TenantContext, window: Window): Promise<Summary> {
  const now = Date.now();
  const hours = SUMMARY_WINDOWS[window];
  const from = (Math.floor(now / HOUR_MS) - hours + 1) * HOUR_MS;
  const { tenantId } = context;
  const d1 = context.db.$client;
  const [requests, proxies, reactors, errors] = await d1.batch([
    d1.prepare("SELECT hour, outcome, requests FROM audit_hourly WHERE tenant_id = ? AND hour >= ?").bind(tenantId, from),
    d1.prepare(BUSIEST).bind(tenantId, "proxy", from, AUDIT.summaryBusiest),
    d1.prepare(BUSIEST).bind(tenantId, "reactor", from, AUDIT.summaryBusiest),
    d1
      .prepare(
        `SELECT created_at, operation, status, trace_id, entity_type, entity_id FROM audit_log INDEXED BY audit_log_tenant_errors
         WHERE tenant_id = ? AND status >= 400 AND created_at >= ? ORDER BY created_at DESC LIMIT ?`,
      )
      .bind(tenantId, from, AUDIT.summaryRecentErrors),
  ]);
  const names = await entityNames(context, [...proxies!.results, ...reactors!.results] as Busiest[]);
  return {
    window,
    from: isoTime(from)!,
    to: isoTime(now)!,
    requests_by_hour: byHour(requests!.results as { hour: number; outcome: number; requests: number }[], from, hours),
    busiest_proxies: (proxies!.results as Busiest[]).map((row) => presentBusiest(row, names)),
    busiest_reactors: (reactors!.results as Busiest[]).map((row) => presentBusiest(row, names)),
    recent_errors: (errors!.results as ErrorRow[]).map((row) => ({ ...row, created_at: isoTime(row.created_at)! })),
  };
}

/** The entities of one type called most since an hour, with their failures: rollup rows of the window only. */
const BUSIEST = `SELECT entity_type, entity_id, sum(calls) AS calls, sum(errors) AS errors FROM audit_entity_hourly
  WHERE tenant_id = ? AND entity_type = ? AND hour >= ? GROUP BY entity_id ORDER BY calls DESC, entity_id LIMIT ?`;

interface Busiest {
  entity_type: "proxy" | "reactor";
  entity_id: string;
  calls: number;
  errors: number;
}

interface ErrorRow {
  created_at: number;
  operation: string;
  status: number;
  trace_id: string;
  entity_type: string;
  entity_id: string | null;
}

/** Every hour of the window, oldest first, with zeros where nothing was recorded. */
function byHour(rows: { hour: number; outcome: number; requests: number }[], from: number, hours: number): Summary["requests_by_hour"] {
  const buckets = Array.from({ length: hours }, (_, i) => ({ hour: isoTime(from + i * HOUR_MS)!, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0 }));
  for (const row of rows) {
    const bucket = buckets[(row.hour - from) / HOUR_MS];
    if (bucket) bucket[`${outcomeOf(row.outcome * 100)}xx` as "2xx"] += row.requests;
  }
  return buckets;
}

/** The names of the proxies and reactors, read from the control database (at most twice AUDIT.summaryBusiest ids). */
async function entityNames(context: TenantContext, rows: Busiest[]): Promise<Map<string, string>> {
  if (rows.length === 0) return new Map();
  const control = context.control.$client;
  const ids = (type: string) => JSON.stringify(rows.filter((row) => row.entity_type === type).map((row) => row.entity_id));
  const [proxies, reactors] = await control.batch<{ id: string; name: string }>([
    control
      .prepare("SELECT id, name FROM proxies WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
      .bind(context.tenantId, ids("proxy")),
    control
      .prepare("SELECT id, name FROM reactors WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
      .bind(context.tenantId, ids("reactor")),
  ]);
  return new Map([...proxies!.results, ...reactors!.results].map(({ id, name }) => [id, name]));
}

function presentBusiest(row: Busiest, names: Map<string, string>) {
  return { id: row.entity_id, name: names.get(row.entity_id) ?? null, calls: row.calls, errors: row.errors };
}
