import { env } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { databaseOf } from "../../src/db/client";
import { retryDelaySeconds } from "../../src/webhooks/delivery";
import { deliveriesOf, recordDeliveryAttempt } from "../../src/webhooks/storage";
import { entryWhere, logEntries } from "../support/audit";
import { call } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { withoutIds } from "../support/random-text";
import { createToken, SSN, seedTokenTenant, VISA } from "../support/tokens";
import { createWebhook, receivedBy, receiver } from "../support/webhooks";

/*
 * Deliveries through the real webhook queue to a receiver on the loopback interface: signed per
 * Standard Webhooks, never holding token data, retried with the same webhook-id, dead-lettered,
 * and the webhook disabled after WEBHOOK_FAILURE_LIMIT (8 in the test pool) failures in a row.
 */

const FAILURE_LIMIT = 8;
const SLOW = { timeout: 60_000 };

/** A tenant whose own creation is already in its log, so no event from before its webhooks reaches them. */
async function settledTenant() {
  const tenant = await seedTokenTenant();
  await logEntries(tenant, 2);
  return tenant;
}
const MAX_RETRIES = 5;

/** A webhook that exists (attempts are recorded only for one), for recording attempts on it directly. */
async function existingWebhook(): Promise<{ tenantId: string; webhookId: string }> {
  const tenant = await seedTokenTenant();
  const hook = await createWebhook(tenant, { url: receiver().url });
  return { tenantId: tenant.tenantId, webhookId: hook.id };
}

describe("webhook delivery", () => {
  it("delivers token.created signed per Standard Webhooks, without the token's data", SLOW, async () => {
    const tenant = await settledTenant();
    const hook = receiver();
    const webhook = await createWebhook(tenant, { url: hook.url, events: ["token.created", "token.deleted"] });
    const token = await createToken(tenant.key, { type: "card", data: { number: VISA, expiration_month: 1, expiration_year: 2040 } });
    expect((await call("DELETE", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(204);

    const received = await receivedBy(hook.name, 2);
    expect(received).toHaveLength(2);
    const bodies = received.map(({ body, headers }) => new Webhook(webhook.secret).verify(body, headers) as any);
    const created = bodies.find((body) => body.event.type === "token.created");
    expect(created.event).toMatchObject({
      id: expect.any(String),
      type: "token.created",
      tenant_id: tenant.tenantId,
      trace_id: expect.any(String),
      data: {
        token: { id: token.id, type: "card", containers: token.containers },
        actor: { id: tenant.applicationId, type: "application" },
      },
    });
    expect(Date.parse(created.delivered_at)).toBeGreaterThanOrEqual(Date.parse(created.event.timestamp));
    expect(bodies.find((body) => body.event.type === "token.deleted").event.data.token).toEqual({ id: token.id });
    for (const { body, headers } of received) {
      expect(body).not.toContain(VISA);
      // The body's ids are random and may hold any four digits.
      expect(withoutIds(body)).not.toContain(VISA.slice(-4));
      expect(headers["webhook-id"]).toEqual(JSON.parse(body).event.id);
    }
    // A signature made with another secret does not verify.
    expect(() => new Webhook(`whsec_${btoa("x".repeat(32))}`).verify(received[0]!.body, received[0]!.headers)).toThrow();
    // The event id is the audit entry's id.
    const entries = await logEntries(tenant, 1, { entity_type: "token", entity_id: token.id });
    expect(entries.map((entry) => entry.id)).toContain(created.event.id);
  });

  it("sends only the events a webhook subscribes to, and nothing to a disabled webhook", SLOW, async () => {
    const tenant = await settledTenant();
    const subscribed = receiver();
    const disabled = receiver();
    await createWebhook(tenant, { url: subscribed.url, events: ["application.created"] });
    await createWebhook(tenant, { url: disabled.url, events: ["application.created", "token.created"], status: "disabled" });
    await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const app = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "later", type: "private", permissions: ["token:read"] },
    });
    const [delivered] = await receivedBy(subscribed.name, 1);
    expect(JSON.parse(delivered!.body).event).toMatchObject({ type: "application.created", data: { application: { id: app.body.id } } });
    expect(delivered!.body).not.toContain(app.body.key);
    // By the time the subscribed receiver has its event, the disabled one would have had its own.
    expect(await receivedBy(disabled.name, 1, 1_000)).toEqual([]);
    expect(await receivedBy(subscribed.name, 2, 1_000)).toHaveLength(1);
  });

  it("retries a failed delivery with the same webhook-id, then dead-letters it into the audit log", SLOW, async () => {
    const tenant = await settledTenant();
    const failing = receiver(500);
    const webhook = await createWebhook(tenant, { url: failing.url });
    await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const attempts = await receivedBy(failing.name, 1 + MAX_RETRIES, 30_000);
    expect(attempts).toHaveLength(1 + MAX_RETRIES);
    expect(new Set(attempts.map(({ headers }) => headers["webhook-id"])).size).toBe(1);
    const dead = await entryWhere(tenant, { entity_type: "webhook", entity_id: webhook.id }, (entry) => entry.operation === "deliver");
    expect(dead).toMatchObject({ actor_type: "system", status: 502, message: expect.stringContaining("token.created") });
    // Six failures are fewer than the limit: the webhook stays enabled.
    expect((await call("GET", `/webhooks/${webhook.id}`, { key: tenant.managementKey })).body.status).toBe("enabled");
  });

  it(`disables a webhook after ${FAILURE_LIMIT} failures in a row; PUT re-enables it`, SLOW, async () => {
    const tenant = await settledTenant();
    const failing = receiver(503);
    const webhook = await createWebhook(tenant, { url: failing.url });
    await createToken(tenant.key, { type: "social_security_number", data: SSN });
    await createToken(tenant.key, { type: "social_security_number", data: "987-65-4321" });
    await receivedBy(failing.name, FAILURE_LIMIT, 30_000);
    const disabling = await entryWhere(tenant, { entity_type: "webhook", entity_id: webhook.id }, (entry) => entry.operation === "disable");
    expect(disabling).toMatchObject({ actor_type: "system", message: expect.stringContaining(`${FAILURE_LIMIT} failed deliveries`) });
    expect((await call("GET", `/webhooks/${webhook.id}`, { key: tenant.managementKey })).body.status).toBe("disabled");
    // Disabled: the other event's remaining retries deliver nothing more.
    expect(await receivedBy(failing.name, FAILURE_LIMIT + 1, 1_500)).toHaveLength(FAILURE_LIMIT);

    const working = receiver();
    const enabled = await call("PUT", `/webhooks/${webhook.id}`, {
      key: tenant.managementKey,
      body: { name: "hook", url: working.url, events: ["token.created"], status: "enabled" },
    });
    expect(enabled.body.status).toBe("enabled");
    await createToken(tenant.key, { type: "social_security_number", data: "111-22-3333" });
    expect(await receivedBy(working.name, 1)).toHaveLength(1);
  });

  it("a destination the egress policy refuses at delivery counts as a failure", SLOW, async () => {
    const tenant = await settledTenant();
    const hook = receiver();
    const webhook = await createWebhook(tenant, { url: hook.url });
    // Stored before the policy changed, or written around it: the delivery still checks.
    await env.DB.prepare("UPDATE webhooks SET url = 'http://10.1.2.3/hook' WHERE id = ?").bind(webhook.id).run();
    await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const dead = await entryWhere(tenant, { entity_type: "webhook", entity_id: webhook.id }, (entry) => entry.operation === "deliver");
    expect(dead).toMatchObject({ status: 502 });
  });

  it("a delivery that cannot be attempted does not lose what the other deliveries of its batch recorded", SLOW, async () => {
    const tenant = await settledTenant();
    const unreadable = await createWebhook(tenant, { url: receiver().url });
    const failing = receiver(500);
    const last = await createWebhook(tenant, { url: failing.url });
    // One secret that no longer decrypts, and a webhook one failure short of the limit.
    await env.DB.prepare("UPDATE webhooks SET secret_ciphertext = 'x' WHERE id = ?").bind(unreadable.id).run();
    await env.DB.prepare("UPDATE webhooks SET consecutive_failures = ? WHERE id = ?")
      .bind(FAILURE_LIMIT - 1, last.id)
      .run();
    await expectLoggedError(/waits for a retry: Unsupported ciphertext/, async () => {
      await createToken(tenant.key, { type: "social_security_number", data: SSN });
      const disabling = await entryWhere(tenant, { entity_type: "webhook", entity_id: last.id }, (entry) => entry.operation === "disable");
      expect(disabling).toMatchObject({ actor_type: "system", message: expect.stringContaining(`${FAILURE_LIMIT} failed deliveries`) });
      // The unreadable one is retried on its own until the dead-letter queue takes it.
      const dead = await entryWhere(tenant, { entity_type: "webhook", entity_id: unreadable.id }, (entry) => entry.operation === "deliver");
      expect(dead).toMatchObject({ status: 502 });
    });
    expect(await receivedBy(failing.name, 2, 1_000)).toHaveLength(1);
  });

  it("GET /webhooks/{id}/deliveries tells what became of each event, never its payload", SLOW, async () => {
    const tenant = await settledTenant();
    const working = receiver();
    const failing = receiver(500);
    const good = await createWebhook(tenant, { url: working.url });
    const bad = await createWebhook(tenant, { url: failing.url });
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    await receivedBy(working.name, 1);
    await receivedBy(failing.name, 1 + MAX_RETRIES, 30_000);
    const settledDeliveries = async (id: string, settled: (entry: any) => boolean) => {
      for (const deadline = Date.now() + 30_000; ; ) {
        const reply = await call("GET", `/webhooks/${id}/deliveries`, { key: tenant.managementKey });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
        if (reply.body.data.length > 0 && settled(reply.body.data[0])) return reply.body.data;
        if (Date.now() > deadline) throw new Error(`deliveries of ${id} never settled: ${JSON.stringify(reply.body)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const delivered = await settledDeliveries(good.id, (entry) => entry.status === "delivered");
    expect(delivered).toEqual([
      expect.objectContaining({ event_type: "token.created", status: "delivered", attempts: 1, last_outcome: null }),
    ]);
    // Every attempt is counted; once the queue gives up (dead letter), the delivery is failed.
    const failed = await settledDeliveries(bad.id, (entry) => entry.status === "failed");
    expect(failed).toEqual([
      expect.objectContaining({ event_type: "token.created", attempts: 1 + MAX_RETRIES, last_outcome: "answered 500" }),
    ]);
    expect(failed[0].event_id).toBe(delivered[0].event_id);
    for (const text of [JSON.stringify(delivered), JSON.stringify(failed)]) {
      expect(text).not.toContain(SSN);
      expect(text).not.toContain(token.id);
    }
    // They go with their webhook.
    expect((await call("DELETE", `/webhooks/${bad.id}`, { key: tenant.managementKey })).status).toBe(204);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?").bind(bad.id).first();
    expect(left).toEqual({ n: 0 });
  });

  it("a webhook keeps only its newest deliveries: recording one more prunes the oldest in the same batch", async () => {
    const db = databaseOf(env);
    const { tenantId, webhookId } = await existingWebhook();
    const kept = 3;
    for (let i = 0; i < kept + 2; i++) {
      await recordDeliveryAttempt(
        db,
        { tenantId, webhookId, eventId: `e${i}`, eventType: "token.created", status: "delivered", outcome: null, at: 1_000 + i },
        kept,
      );
    }
    const rows = await deliveriesOf(db, tenantId, webhookId, 100);
    expect(rows.map((row) => row.eventId)).toEqual(["e4", "e3", "e2"]);
  });

  it("attempts recorded at once, at the same millisecond, never leave more than the newest kept", async () => {
    const db = databaseOf(env);
    const { tenantId, webhookId } = await existingWebhook();
    const kept = 5;
    const attempt = (i: number) => ({
      tenantId,
      webhookId,
      eventId: `e${i}`,
      eventType: "token.created",
      status: "delivered" as const,
      outcome: null,
      at: i < 30 ? 1_000 : 2_000,
    });
    await Promise.all(Array.from({ length: 40 }, (_, i) => recordDeliveryAttempt(db, attempt(i), kept)));
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?")
      .bind(webhookId)
      .first<{ n: number }>())!;
    expect(n).toBe(kept);
    const rows = await deliveriesOf(db, tenantId, webhookId, 100);
    expect(rows.every((row) => row.lastAttemptAt === 2_000)).toBe(true);
  });

  it("an attempt that ends after its webhook was deleted leaves no row behind", async () => {
    const tenant = await seedTokenTenant();
    const hook = await createWebhook(tenant, { url: receiver().url });
    // The delivery read the webhook and sent the event; meanwhile the webhook (and its rows) went.
    expect((await call("DELETE", `/webhooks/${hook.id}`, { key: tenant.managementKey })).status).toBe(204);
    const attempt = { tenantId: tenant.tenantId, webhookId: hook.id, eventId: "e", eventType: "token.created", at: Date.now() };
    await recordDeliveryAttempt(databaseOf(env), { ...attempt, status: "retrying", outcome: "answered 500" }, 100);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?").bind(hook.id).first();
    expect(left).toEqual({ n: 0 });
  });

  it("backs off exponentially, capped at an hour", () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelaySeconds(30, attempt))).toEqual([30, 60, 120, 240, 480]);
    expect(retryDelaySeconds(30, 20)).toBe(3_600);
    expect(retryDelaySeconds(0, 3)).toBe(0);
  });
});
