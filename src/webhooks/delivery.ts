import type { RequestContext } from "../context";

/** The webhook queue's consumer: signs and delivers each message. Filled in by the webhooks change. */
export async function deliverWebhooks(_context: RequestContext, batch: MessageBatch<unknown>): Promise<void> {
  batch.ackAll();
}

/** The webhook dead-letter queue's consumer: records each abandoned delivery in the audit log. */
export async function recordDeadDeliveries(_context: RequestContext, batch: MessageBatch<unknown>): Promise<void> {
  batch.ackAll();
}
