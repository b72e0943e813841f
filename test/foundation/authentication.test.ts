import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, createApplication, dumpDatabase, expectProblem, seedTenant } from "../support/harness";

describe("authentication", () => {
  it("answers 401 without an API key", async () => {
    const problem = expectProblem(await call("GET", "/applications"), 401);
    expect(problem.detail).toContain("SVC-API-KEY");
  });

  it("answers 401 for an unknown key", async () => {
    expectProblem(await call("GET", "/applications", { key: "key_unknown" }), 401);
    expectProblem(await call("GET", "/applications", { key: "x".repeat(5000) }), 401);
  });

  it("answers 403 naming the permission that is missing", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const problem = expectProblem(await call("GET", "/applications", { key: app.key }), 403);
    expect(problem.detail).toContain("application:read");
    const create = expectProblem(await call("POST", "/applications", { key: app.key, body: { name: "x", type: "public" } }), 403);
    expect(create.detail).toContain("application:create");
  });

  it("checks the permission before validating the body", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    expectProblem(await call("POST", "/applications", { key: app.key, body: { nonsense: true } }), 403);
  });

  it("lists every permission with the application types that may hold it", async () => {
    const tenant = await seedTenant();
    const reply = await call("GET", "/permissions", { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body).toContainEqual({
      type: "token:create",
      description: expect.any(String),
      application_types: ["private", "public", "expiring"],
    });
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "proxy:create", application_types: ["management"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "session:authorize", application_types: ["private"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "keys:create", application_types: ["management"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "google-pay:create", application_types: ["private", "public"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "google-pay-merchant:create", application_types: ["management"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "apple-pay:manage", application_types: ["management"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "apple-pay:create", application_types: ["private", "public"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "documents:reveal", application_types: ["private"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "apple-pay:reveal", application_types: ["private"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "google-pay:reveal", application_types: ["private"] }));
    expect(reply.body).toContainEqual(expect.objectContaining({ type: "apple-pay:session", application_types: ["private", "public"] }));
    expect(reply.body).toHaveLength(49);
  });
});

describe("every application route needs a key and its permission", () => {
  const ID = "00000000-0000-4000-8000-000000000001";
  const KEY_ID = "00000000-0000-4000-8000-000000000002";
  it.each([
    ["POST", "/applications", "application:create"],
    ["GET", "/applications", "application:read"],
    ["GET", `/applications/${ID}`, "application:read"],
    ["PUT", `/applications/${ID}`, "application:update"],
    ["DELETE", `/applications/${ID}`, "application:delete"],
    ["POST", `/applications/${ID}/keys`, "application:create"],
    ["GET", `/applications/${ID}/keys`, "application:read"],
    ["GET", `/applications/${ID}/keys/${KEY_ID}`, "application:read"],
    ["DELETE", `/applications/${ID}/keys/${KEY_ID}`, "application:delete"],
  ])("%s %s: 401 without a key, 403 naming %s without the permission", async (method, path, permission) => {
    const body = method === "POST" || method === "PUT" ? { name: "x", type: "public" } : undefined;
    expectProblem(await call(method, path, { body }), 401);
    const tenant = await seedTenant();
    const tokenApp = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const problem = expectProblem(await call(method, path, { key: tokenApp.key, body }), 403);
    expect(problem.detail).toContain(permission);
  });
});

describe("API keys", () => {
  it("creates another key that works, and lists keys without their plaintext", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const created = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^key_/);
    expect(created.body.key).not.toBe(app.key);
    expect((await call("GET", "/permissions", { key: created.body.key })).status).toBe(200);

    const listed = await call("GET", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveLength(2);
    for (const key of listed.body) expect(Object.keys(key).sort()).toEqual(["created_at", "expires_at", "id"]);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.key);
  });

  it("revokes a key with immediate effect, leaving the application's other keys working", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const second = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    expect((await call("GET", "/permissions", { key: app.key })).status).toBe(200);

    const keys = await call("GET", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    const firstKeyId = keys.body.find((key: { id: string }) => key.id !== second.body.id).id;
    expect((await call("DELETE", `/applications/${app.id}/keys/${firstKeyId}`, { key: tenant.managementKey })).status).toBe(204);

    expectProblem(await call("GET", "/permissions", { key: app.key }), 401);
    expect((await call("GET", "/permissions", { key: second.body.key })).status).toBe(200);
    expectProblem(await call("DELETE", `/applications/${app.id}/keys/${firstKeyId}`, { key: tenant.managementKey }), 404);
  });

  it("never revokes another tenant's key", async () => {
    const owner = await seedTenant();
    const other = await seedTenant();
    const app = await createApplication(owner, { type: "private", permissions: ["token:read"] });
    const keys = await call("GET", `/applications/${app.id}/keys`, { key: owner.managementKey });
    expectProblem(await call("DELETE", `/applications/${app.id}/keys/${keys.body[0].id}`, { key: other.managementKey }), 404);
    expect((await call("GET", "/permissions", { key: app.key })).status).toBe(200);
  });

  it("stores keys only as hashes: no table holds a plaintext key", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const extra = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    const idempotent = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "replayable", type: "public" },
      headers: { "SVC-IDEMPOTENCY-KEY": "plaintext-check" },
    });
    const dump = await dumpDatabase();
    const secrets = [tenant.managementKey, app.key, extra.body.key, idempotent.body.keys[0].key, env.BOOTSTRAP_API_KEY];
    for (const secret of secrets) {
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(4, 24));
    }
  });
});
