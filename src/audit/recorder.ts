import type { RequestContext } from "../context";
import { AuditUnavailableError } from "../http/problem";
import { type AuditEntry, byTenant } from "./entry";
import * as storage from "./storage";
import { chainDatabase } from "./writer";

/** Cloudflare Queues takes at most 100 messages in one sendBatch. */
const SEND_BATCH = 100;

/**
 * Sends the entries to the audit queue before the response leaves. When the queue cannot take
 * them, they are written straight to audit_pending in the tenant's database, for the cron to
 * chain; when that fails too, an AuditUnavailableError (503): no request goes unrecorded silently.
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
      throw new AuditUnavailableError();
    }
  }
}
