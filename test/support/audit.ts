import { expect } from "vitest";
import type { Verification } from "../../src/audit/service";
import { call, type Tenant } from "./harness";

export interface LogEntry {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string;
  credential_id: string | null;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  status: number;
  trace_id: string;
  created_at: string;
  seq: number;
  hash: string;
}

/**
 * The tenant's log entries matching `filter`, oldest first, once at least `atLeast` of them are
 * written: the queue consumer writes them a moment after the requests answer. Reading the log is
 * itself logged; those entries (entity type `log`) are left out unless the filter asks for them.
 */
export async function logEntries(
  tenant: Tenant,
  atLeast: number,
  filter: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<LogEntry[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const entries = (await allEntries(tenant, filter)).filter((entry) => filter.entity_type === "log" || entry.entity_type !== "log");
    if (entries.length >= atLeast || Date.now() > deadline) return entries;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every page of GET /logs, oldest first. */
async function allEntries(tenant: Tenant, filter: Record<string, string>): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  for (let page = 1; ; page++) {
    const query = new URLSearchParams({ size: "100", page: String(page), ...filter });
    const reply = await call("GET", `/logs?${query}`, { key: tenant.managementKey });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    entries.push(...(reply.body.data as LogEntry[]));
    // Entries written while the pages are read (these very reads are logged) shift later pages, so
    // an entry can come twice; an id is unique per tenant in the log itself, so twice is one entry.
    if (page >= reply.body.pagination.total_pages) return [...new Map(entries.map((entry) => [entry.id, entry])).values()].toReversed();
  }
}

/** GET /logs/verify, which must answer 200. */
export async function verifyLog(tenant: Tenant, range: Record<string, string> = {}): Promise<Verification> {
  const reply = await call("GET", `/logs/verify?${new URLSearchParams(range)}`, { key: tenant.managementKey });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

/** The first entry of the tenant's log matching `filter` and `where`, once it is written. */
export async function entryWhere(
  tenant: Tenant,
  filter: Record<string, string>,
  where: (entry: LogEntry) => boolean,
  timeoutMs = 30_000,
): Promise<LogEntry | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = (await allEntries(tenant, filter)).find(where);
    if (found || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
