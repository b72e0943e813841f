import { expect } from "vitest";
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
 * written: the queue consumer writes them a moment after the requests answer.
 */
export async function logEntries(
  tenant: Tenant,
  atLeast: number,
  filter: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<LogEntry[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await call("GET", `/logs?${new URLSearchParams({ size: "100", ...filter })}`, { key: tenant.managementKey });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const entries = (reply.body.data as LogEntry[]).toReversed();
    if (entries.length >= atLeast || Date.now() > deadline) return entries;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
