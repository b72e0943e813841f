import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication, dumpDatabase, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { createWebhook, receiver } from "../support/webhooks";

/* POST|GET|PUT|DELETE /webhooks and GET /webhooks/event-types. */

let tenant: Tenant;

beforeAll(async () => {
  tenant = await seedTenant();
});

describe("webhooks management", () => {
  it("creates a webhook whose secret is shown once and never stored in the clear", async () => {
    const { url } = receiver();
    const created = await createWebhook(tenant, { url, events: ["token.created", "token.deleted"], notify_email: "ops@example.com" });
    expect(created).toMatchObject({
      id: expect.any(String),
      tenant_id: tenant.tenantId,
      name: "hook",
      url,
      events: ["token.created", "token.deleted"],
      status: "enabled",
      notify_email: "ops@example.com",
      created_by: tenant.managementApplicationId,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const read = await call("GET", `/webhooks/${created.id}`, { key: tenant.managementKey });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty("secret");
    const listed = await call("GET", "/webhooks", { key: tenant.managementKey });
    expect(JSON.stringify(listed.body)).not.toContain(created.secret);
    expect(await dumpDatabase()).not.toContain(created.secret.slice("whsec_".length));
  });

  it("a replayed create answers the same webhook and secret, which the idempotency record holds only encrypted", async () => {
    const request = {
      key: tenant.managementKey,
      headers: { "SVC-IDEMPOTENCY-KEY": crypto.randomUUID() },
      body: { name: "once", url: receiver().url, events: ["token.created"] },
    };
    const first = await call("POST", "/webhooks", request);
    expect(first.status).toBe(201);
    const replay = await call("POST", "/webhooks", request);
    expect(replay.body).toEqual(first.body);
    const { body } = await call("GET", "/webhooks?name=once", { key: tenant.managementKey });
    expect(body.data).toHaveLength(1);
    expect(await dumpDatabase()).not.toContain(first.body.secret.slice("whsec_".length));
  });

  it("validates the event types and refuses a url the egress policy refuses", async () => {
    const { url } = receiver();
    const unknownEvent = await call("POST", "/webhooks", { key: tenant.managementKey, body: { name: "x", url, events: ["token.read"] } });
    expect(expectProblem(unknownEvent, 400).errors).toHaveProperty(["events[0]"]);
    const none = await call("POST", "/webhooks", { key: tenant.managementKey, body: { name: "x", url, events: [] } });
    expectProblem(none, 400);
    for (const refused of ["http://10.0.0.1/hook", "ftp://example.com/hook", "http://169.254.169.254/latest"]) {
      const reply = await call("POST", "/webhooks", {
        key: tenant.managementKey,
        body: { name: "x", url: refused, events: ["token.created"] },
      });
      expect(expectProblem(reply, 400).errors, refused).toHaveProperty("url");
    }
  });

  it("lists the event types", async () => {
    const reply = await call("GET", "/webhooks/event-types", { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(expect.arrayContaining(["token.created", "application.updated", "reactor-formula.deleted"]));
  });

  it("holds at most 5 webhooks per tenant", async () => {
    const own = await seedTenant();
    for (let i = 0; i < 5; i++) await createWebhook(own, { url: receiver().url });
    const sixth = await call("POST", "/webhooks", {
      key: own.managementKey,
      body: { name: "x", url: receiver().url, events: ["token.created"] },
    });
    expect(expectProblem(sixth, 409).detail).toContain("at most 5");
    // With an idempotency key, its batch commits the mark without a webhook: the retry replays that very 409.
    const once = {
      key: own.managementKey,
      headers: { "SVC-IDEMPOTENCY-KEY": "sixth" },
      body: { name: "x", url: receiver().url, events: ["token.created"] },
    };
    const refused = await call("POST", "/webhooks", once);
    const replayed = await call("POST", "/webhooks", once);
    expect(replayed.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(expectProblem(replayed, 409).detail).toBe(expectProblem(refused, 409).detail);
    expect(replayed.body.detail).toContain("at most 5");
    const { body } = await call("GET", "/webhooks", { key: own.managementKey });
    await call("DELETE", `/webhooks/${body.data[0].id}`, { key: own.managementKey });
    await createWebhook(own, { url: receiver().url });
  });

  it("replaces a webhook with PUT and deletes it", async () => {
    const created = await createWebhook(tenant, { url: receiver().url });
    const { url } = receiver();
    const replaced = await call("PUT", `/webhooks/${created.id}`, {
      key: tenant.managementKey,
      body: { name: "renamed", url, events: ["proxy.created"], status: "disabled" },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: "renamed", url, events: ["proxy.created"], status: "disabled", notify_email: null });
    expect(replaced.body.modified_by).toBe(tenant.managementApplicationId);
    expect((await call("DELETE", `/webhooks/${created.id}`, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await call("GET", `/webhooks/${created.id}`, { key: tenant.managementKey }), 404);
  });

  it("needs the webhook permissions, and hides other tenants' webhooks", async () => {
    const created = await createWebhook(tenant, { url: receiver().url });
    const reader = await createApplication(tenant, { type: "management", permissions: ["webhook:read"] });
    expect((await call("GET", `/webhooks/${created.id}`, { key: reader.key })).status).toBe(200);
    expectProblem(await call("DELETE", `/webhooks/${created.id}`, { key: reader.key }), 403);
    const privateApp = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expectProblem(await call("GET", "/webhooks", { key: privateApp.key }), 403);
    const other = await seedTenant();
    expectProblem(await call("GET", `/webhooks/${created.id}`, { key: other.managementKey }), 404);
    expectProblem(await call("DELETE", `/webhooks/${created.id}`, { key: other.managementKey }), 404);
  });
});
