/**
 * The webhook queue's consumers. A message is one event for one webhook; it is signed per Standard
 * Webhooks with the webhook's secret (the same `webhook-id`, the event id, on every attempt) and
 * POSTed through the egress policy. A failed attempt is retried with exponential backoff; after the
 * queue's max_retries the message goes to the dead-letter queue, whose consumer records it in the
 * audit log. WEBHOOK_FAILURE_LIMIT failures in a row, across events, disable the webhook.
 */
import { Webhook } from "standardwebhooks";
import { recordEntries } from "../audit/recorder";
import type { RequestContext } from "../context";
import { fetchThroughEgress } from "../egress/policy";
import { ProblemError } from "../errors";
import { WEBHOOKS } from "../limits";
import type { WebhookDelivery } from "./events";
import { secretContext } from "./service";
import * as storage from "./storage";

/** The longest a retry waits (Cloudflare Queues allows up to 12 hours). */
const MAX_RETRY_DELAY_S = 3_600;

/** Seconds before retry `attempts` (1 for the first retry): base, 2·base, 4·base …, capped at an hour. */
export function retryDelaySeconds(baseSeconds: number, attempts: number): number {
  return Math.min(baseSeconds * 2 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_S);
}

export async function deliverWebhooks(context: RequestContext, batch: MessageBatch<WebhookDelivery>): Promise<void> {
  context.audit.actor = { id: null, type: "system" };
  await Promise.all(batch.messages.map((message) => deliverOrRetry(context, message)));
  await recordEntries(context, context.audit.conclude(undefined, 200));
}

/**
 * A delivery that could not even be attempted (a database or the secret failed) is retried on its
 * own, not counted against the receiver; failing the whole batch instead would drop the audit
 * entries the other deliveries recorded.
 */
async function deliverOrRetry(context: RequestContext, message: Message<WebhookDelivery>): Promise<void> {
  try {
    await deliver(context, message);
  } catch (error) {
    const { webhook_id: webhookId, event } = message.body;
    console.error(`webhooks: event ${event.id} for webhook ${webhookId} waits for a retry: ${(error as Error).message}`);
    message.retry({ delaySeconds: retryDelaySeconds(context.config.WEBHOOK_RETRY_BASE_S, message.attempts) });
  }
}

async function deliver(context: RequestContext, message: Message<WebhookDelivery>): Promise<void> {
  const { webhook_id: webhookId, tenant_id: tenantId } = message.body;
  const webhook = await storage.findWebhook(context.control, tenantId, webhookId);
  // Deleted or disabled since the event was queued: nothing to deliver.
  if (webhook?.status !== "enabled") return message.ack();

  const failure = await send(context, webhook, message.body);
  const attempt = { tenantId, webhookId, eventId: message.body.event.id, eventType: message.body.event.type, at: Date.now() };
  if (failure === null) {
    await Promise.all([
      storage.deliverySucceeded(context.control, tenantId, webhookId),
      recordAttempt(context, { ...attempt, status: "delivered", outcome: null }),
    ]);
    return message.ack();
  }
  const limit = context.config.WEBHOOK_FAILURE_LIMIT;
  const counted = await storage.deliveryFailed(context.control, tenantId, webhookId, limit);
  const retried = counted !== null && !counted.disabled;
  await recordAttempt(context, { ...attempt, status: retried ? "retrying" : "failed", outcome: failure });
  if (counted === null) return message.ack();
  if (counted.disabled) {
    context.audit.record({
      tenantId,
      entityType: "webhook",
      entityId: webhookId,
      operation: "disable",
      message: `Disabled after ${counted.failures} failed deliveries in a row (the last ${failure}); PUT status enabled re-enables it`,
      status: 200,
    });
    return message.ack();
  }
  message.retry({ delaySeconds: retryDelaySeconds(context.config.WEBHOOK_RETRY_BASE_S, message.attempts) });
}

/**
 * Keeps the attempt for GET /webhooks/{id}/deliveries. A record that cannot be written is logged and
 * left: retrying the message for it would send the event to the receiver again.
 */
async function recordAttempt(context: RequestContext, attempt: storage.DeliveryAttempt): Promise<void> {
  try {
    await storage.recordDeliveryAttempt(context.control, attempt, WEBHOOKS.deliveriesKept);
  } catch (error) {
    console.error(
      `webhooks: the attempt at event ${attempt.eventId} for webhook ${attempt.webhookId} was not recorded: ${(error as Error).message}`,
    );
  }
}

/** Signs and sends one delivery; null when the receiver took it (2xx), else why it failed. */
async function send(context: RequestContext, webhook: storage.WebhookRow, delivery: WebhookDelivery): Promise<string | null> {
  const keys = await context.keysOf(webhook.tenantId);
  const secret = await keys.decrypt(webhook.secretCiphertext, secretContext(webhook.id));
  const now = new Date();
  const payload = JSON.stringify({ event: delivery.event, delivered_at: now.toISOString() });
  const request = new Request(webhook.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": delivery.event.id,
      "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign(delivery.event.id, now, payload),
    },
    body: payload,
  });
  try {
    const response = await fetchThroughEgress(request, {
      allowInsecure: context.config.ALLOW_INSECURE_DESTINATIONS,
      timeoutMs: WEBHOOKS.deliveryTimeoutMs,
    });
    await response.body?.cancel();
    return response.ok ? null : `answered ${response.status}`;
  } catch (error) {
    if (error instanceof ProblemError) return `failed: ${error.message}`;
    throw error;
  }
}

/** The dead-letter queue's consumer: each delivery the queue gave up on becomes an audit entry. */
export async function recordDeadDeliveries(context: RequestContext, batch: MessageBatch<WebhookDelivery>): Promise<void> {
  context.audit.actor = { id: null, type: "system" };
  for (const { body } of batch.messages) {
    await storage.deliveryAbandoned(context.control, body.tenant_id, body.webhook_id, body.event.id);
    context.audit.record({
      tenantId: body.tenant_id,
      entityType: "webhook",
      entityId: body.webhook_id,
      operation: "deliver",
      message: `Gave up delivering event ${body.event.id} (${body.event.type}) after its retries`,
      status: 502,
    });
  }
  await recordEntries(context, context.audit.conclude(undefined, 502));
  batch.ackAll();
}
