import { and, desc, eq, notExists, notInArray, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { type MarkQuery, markedStatements } from "../db/commit-marks";
import { webhookDeliveries, webhooks } from "../db/control-tables";
import type { KeysetPosition } from "../db/cursors";
import { namedResourcesAfter, namedResourcesPage } from "../db/pages";
import type { ListFilter } from "../http/schemas";

export type WebhookRow = typeof webhooks.$inferSelect;

const webhook = (tenantId: string, id: string) => and(eq(webhooks.tenantId, tenantId), eq(webhooks.id, id));

/** Inserts the webhook unless the tenant already holds `limit`: false then (one statement, so two creates cannot both pass). */
export async function insertWebhook(db: Database, row: WebhookRow, limit: number, mark: MarkQuery | null = null): Promise<boolean> {
  const insert = db.$client
    .prepare(
      `INSERT INTO webhooks (id, tenant_id, name, url, events, status, notify_email, secret_ciphertext, consecutive_failures, created_by, created_at)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ? WHERE (SELECT count(*) FROM webhooks WHERE tenant_id = ?) < ?`,
    )
    .bind(
      row.id,
      row.tenantId,
      row.name,
      row.url,
      row.events,
      row.status,
      row.notifyEmail,
      row.secretCiphertext,
      row.createdBy,
      row.createdAt,
      row.tenantId,
      limit,
    );
  const [result] = await db.$client.batch([insert, ...markedStatements(db, mark)]);
  return result!.meta.changes === 1;
}

export async function findWebhook(db: Database, tenantId: string, id: string): Promise<WebhookRow | undefined> {
  const [row] = await db.select().from(webhooks).where(webhook(tenantId, id)).limit(1);
  return row;
}

export function webhooksPage(db: Database, tenantId: string, filter: ListFilter) {
  return namedResourcesPage(db, webhooks, tenantId, filter);
}

/** Up to `limit` of the tenant's webhooks after the position, newest first. */
export function webhooksAfter(
  db: Database,
  tenantId: string,
  filter: { id: string[]; name?: string },
  after: KeysetPosition | null,
  limit: number,
) {
  return namedResourcesAfter(db, webhooks, tenantId, filter, after, limit);
}

export async function updateWebhook(
  db: Database,
  tenantId: string,
  id: string,
  changes: Pick<WebhookRow, "name" | "url" | "events" | "status" | "notifyEmail" | "modifiedBy" | "modifiedAt">,
): Promise<WebhookRow | undefined> {
  // Enabling a webhook forgets the failures that disabled it.
  const failures = changes.status === "enabled" ? 0 : webhooks.consecutiveFailures;
  const [row] = await db
    .update(webhooks)
    .set({ ...changes, consecutiveFailures: failures })
    .where(webhook(tenantId, id))
    .returning();
  return row;
}

export async function deleteWebhook(db: Database, tenantId: string, id: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db.delete(webhooks).where(webhook(tenantId, id)).returning({ id: webhooks.id }),
    db.delete(webhookDeliveries).where(and(eq(webhookDeliveries.tenantId, tenantId), eq(webhookDeliveries.webhookId, id))),
  ]);
  return deleted.length === 1;
}

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;

/** An attempt at delivering one event to one webhook. */
export interface DeliveryAttempt {
  tenantId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  status: DeliveryRow["status"];
  /** Null once delivered. */
  outcome: string | null;
  at: number;
}

/**
 * Records an attempt on the event's row (the first creates it, each later one counts), and keeps the
 * webhook's newest `kept` rows, in one batch: a webhook's rows stay bounded however many events it gets.
 * An attempt that ends after its webhook was deleted (and its rows with it) leaves none behind: nothing
 * would ever read or delete them.
 */
export async function recordDeliveryAttempt(db: Database, attempt: DeliveryAttempt, kept: number): Promise<void> {
  const { tenantId, webhookId } = attempt;
  const ofWebhook = and(eq(webhookDeliveries.tenantId, tenantId), eq(webhookDeliveries.webhookId, webhookId));
  await db.batch([
    db
      .insert(webhookDeliveries)
      .values({
        tenantId,
        webhookId,
        eventId: attempt.eventId,
        eventType: attempt.eventType,
        status: attempt.status,
        attempts: 1,
        lastOutcome: attempt.outcome,
        firstAttemptAt: attempt.at,
        lastAttemptAt: attempt.at,
      })
      .onConflictDoUpdate({
        target: [webhookDeliveries.tenantId, webhookDeliveries.webhookId, webhookDeliveries.eventId],
        set: {
          status: attempt.status,
          attempts: sql`${webhookDeliveries.attempts} + 1`,
          lastOutcome: attempt.outcome,
          lastAttemptAt: attempt.at,
        },
      }),
    db
      .delete(webhookDeliveries)
      .where(
        and(
          ofWebhook,
          notInArray(
            webhookDeliveries.eventId,
            db
              .select({ eventId: webhookDeliveries.eventId })
              .from(webhookDeliveries)
              .where(ofWebhook)
              .orderBy(desc(webhookDeliveries.lastAttemptAt))
              .limit(kept),
          ),
        ),
      ),
    db
      .delete(webhookDeliveries)
      .where(and(ofWebhook, notExists(db.select({ id: webhooks.id }).from(webhooks).where(webhook(tenantId, webhookId))))),
  ]);
}

/** The queue gave up on the event (its retries spent): its row says failed, attempts unchanged. */
export async function deliveryAbandoned(db: Database, tenantId: string, webhookId: string, eventId: string): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: "failed" })
    .where(
      and(eq(webhookDeliveries.tenantId, tenantId), eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.eventId, eventId)),
    );
}

/** The webhook's kept deliveries, newest first. */
export function deliveriesOf(db: Database, tenantId: string, webhookId: string, limit: number): Promise<DeliveryRow[]> {
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.tenantId, tenantId), eq(webhookDeliveries.webhookId, webhookId)))
    .orderBy(desc(webhookDeliveries.lastAttemptAt))
    .limit(limit);
}

/** The tenant's enabled webhooks with their subscribed events, for raising events. */
export async function enabledWebhooks(db: Database, tenantId: string): Promise<{ id: string; events: string[] }[]> {
  const rows = await db
    .select({ id: webhooks.id, events: webhooks.events })
    .from(webhooks)
    .where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.status, "enabled")));
  return rows.map((row) => ({ id: row.id, events: JSON.parse(row.events) as string[] }));
}

/** A delivery succeeded: the run of failures ends. */
export async function deliverySucceeded(db: Database, tenantId: string, id: string): Promise<void> {
  await db
    .update(webhooks)
    .set({ consecutiveFailures: 0 })
    .where(and(webhook(tenantId, id), sql`${webhooks.consecutiveFailures} > 0`));
}

/**
 * A delivery failed: counts it, and disables the webhook when the run reaches `limit`, in one
 * statement. Answers the run's length and whether this failure disabled the webhook.
 */
export async function deliveryFailed(
  db: Database,
  tenantId: string,
  id: string,
  limit: number,
): Promise<{ failures: number; disabled: boolean } | null> {
  const [row] = await db
    .update(webhooks)
    .set({
      consecutiveFailures: sql`${webhooks.consecutiveFailures} + 1`,
      status: sql`CASE WHEN ${webhooks.consecutiveFailures} + 1 >= ${limit} THEN 'disabled' ELSE ${webhooks.status} END`,
    })
    .where(and(webhook(tenantId, id), eq(webhooks.status, "enabled")))
    .returning({ failures: webhooks.consecutiveFailures, status: webhooks.status });
  return row ? { failures: row.failures, disabled: row.status === "disabled" } : null;
}
