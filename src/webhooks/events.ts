import type { AuditEntry } from "../audit/entry";
import type { RequestContext } from "../context";
import { isoTime } from "../http/schemas";
import * as storage from "./storage";

/** The events a webhook may subscribe to: those of the original interface's event data that this vault raises. */
export const WEBHOOK_EVENT_TYPES = [
  "token.created",
  "token.updated",
  "token.deleted",
  "token-intent.created",
  "token-intent.deleted",
  "token-intent.converted",
  "application.created",
  "application.updated",
  "application.deleted",
  "proxy.created",
  "proxy.updated",
  "proxy.deleted",
  "reactor.created",
  "reactor.updated",
  "reactor.deleted",
  "reactor-formula.created",
  "reactor-formula.updated",
  "reactor-formula.deleted",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The event as receivers get it, inside `{event, delivered_at}`. It never holds token data. */
export interface WebhookEvent {
  id: string;
  type: string;
  timestamp: string;
  tenant_id: string;
  trace_id: string;
  data: Record<string, unknown>;
}

/** One message of the webhook queue: an event for one webhook. */
export interface WebhookDelivery {
  webhook_id: string;
  tenant_id: string;
  event: WebhookEvent;
}

/** Cloudflare Queues takes at most 100 messages in one sendBatch. */
const SEND_BATCH = 100;

/**
 * Queues one delivery per enabled webhook of the entries' tenant that subscribes to each entry's
 * event type. Called by the audit writer once the entries are in the log; every entry here
 * succeeded and carries an event, and its id is the event's id (the same on a redelivery).
 */
export async function enqueueWebhookEvents(context: RequestContext, entries: AuditEntry[]): Promise<void> {
  const tenantId = entries[0]!.tenant_id;
  const webhooks = await storage.enabledWebhooks(context.control, tenantId);
  if (webhooks.length === 0) return;
  const deliveries: WebhookDelivery[] = entries.flatMap((entry) =>
    webhooks
      .filter((webhook) => webhook.events.includes(entry.event!.type))
      .map((webhook) => ({ webhook_id: webhook.id, tenant_id: tenantId, event: eventOf(entry) })),
  );
  for (let start = 0; start < deliveries.length; start += SEND_BATCH) {
    await context.webhookQueue.sendBatch(
      deliveries.slice(start, start + SEND_BATCH).map((body) => ({ body, contentType: "json" as const })),
    );
  }
}

function eventOf(entry: AuditEntry): WebhookEvent {
  return {
    id: entry.id,
    type: entry.event!.type,
    timestamp: isoTime(entry.created_at)!,
    tenant_id: entry.tenant_id,
    trace_id: entry.trace_id,
    data: { ...entry.event!.data, actor: { id: entry.actor_id, type: entry.actor_type } },
  };
}
