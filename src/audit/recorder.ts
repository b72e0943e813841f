import type { RequestContext } from "../context";
import { type AuditEntry, byTenant } from "./entry";
import * as storage from "./storage";
import { chainDatabase } from "./writer";

/** Cloudflare Queues takes at most 100 messages in one sendBatch. */
const SEND_BATCH = 100;

/**
 * Records a request's entries after its answer has left (`waitUntil`), so the send costs the caller
 * nothing. When neither the queue nor audit_pending takes them, each entry is written whole to the
 * worker's log, the last place that keeps it: entries hold no sensitive values
 * (test/audit/operations.test.ts scans them for every plaintext).
 */
export function recordAfterAnswer(waitUntil: (promise: Promise<unknown>) => void, context: RequestContext, entries: AuditEntry[]): void {
  if (entries.length === 0 || !context.config.AUDIT_LOG) return;
  waitUntil(
    recordEntries(context, entries).catch(() => {
      for (const entry of entries) console.error(`audit: unrecorded entry ${JSON.stringify(entry)}`);
    }),
  );
}

/**
 * Sends the entries to the audit queue. When the queue cannot take them, they are written straight
 * to audit_pending in the tenant's database, for the writer or the cron to chain; when that fails
 * too, the database's error is thrown (a queue consumer's batch is then retried).
 */
export async function recordEntries(context: RequestContext, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0 || !context.config.AUDIT_LOG) return;
  try {
    for (let start = 0; start < entries.length; start += SEND_BATCH) {
      await context.auditQueue.sendBatch(entries.slice(start, start + SEND_BATCH).map((body) => ({ body, contentType: "json" as const })));
    }
  } catch (error) {
    console.warn(`audit: the queue did not take ${entries.length} entries (${(error as Error).message}); keeping them in audit_pending`);
    try {
      for (const [tenantId, pending] of byTenant(entries, (entry) => entry.tenant_id)) {
        await storage.keepPending(await chainDatabase(context, tenantId), pending);
      }
    } catch (spillError) {
      console.error(`audit: audit_pending refused ${entries.length} entries too (${(spillError as Error).message})`);
      throw spillError;
    }
  }
}
