import type { AuditEntry } from "../audit/entry";
import type { RequestContext } from "../context";

/**
 * Queues one delivery per enabled webhook of the entries' tenant that subscribes to each entry's
 * event type. Called by the audit writer once the entries are in the log; every entry here
 * succeeded and carries an event.
 */
export async function enqueueWebhookEvents(_context: RequestContext, _entries: AuditEntry[]): Promise<void> {
  // Filled in by the webhooks change.
}
