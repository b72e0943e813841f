import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts, seedTenant } from "../support/harness";

/*
 * Applications and their keys as today's clients (the Node SDK 5.7, the JS SDK 4.30) use them:
 * `create_key`, the list of keys as an array, and a key read by its id.
 */

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

describe("applications: create_key", () => {
  it("create_key false creates the application without a key: no key member, no keys", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "Keyless", type: "private", permissions: ["token:read"], create_key: false },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toMatchObject({ name: "Keyless", type: "private", permissions: ["token:read"], keys: [] });
    expect(reply.body).not.toHaveProperty("key");
    expect((await call("GET", `/applications/${reply.body.id}/keys`, { key: tenant.managementKey })).body).toEqual([]);
    const added = await call("POST", `/applications/${reply.body.id}/keys`, { key: tenant.managementKey });
    expect(added.status).toBe(201);
    expect((await call("GET", "/permissions", { key: added.body.key })).status).toBe(200);
  });

  it("create_key true, the default, answers the new key as before", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "Keyed", type: "private", permissions: ["token:read"], create_key: true },
    });
    expect(reply.body.key).toMatch(/^key_/);
    expect(reply.body.keys).toEqual([expect.objectContaining({ key: reply.body.key })]);
  });

  it("create_key must be a boolean: a 400 naming it, and nothing is created", async () => {
    const tenant = await seedTenant();
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/applications", {
        key: tenant.managementKey,
        body: { name: "Keyless", type: "private", permissions: ["token:read"], create_key: "false" },
      }),
      400,
    );
    expect(problem.errors).toHaveProperty("create_key");
    expect(await rowCounts()).toEqual(before);
  });
});

describe("application keys: list and get", () => {
  it("GET /applications/{id}/keys answers an array, newest first, without the keys' plaintext", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const added = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    const listed = await call("GET", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    expect(listed.status).toBe(200);
    expect(Array.isArray(listed.body)).toBe(true);
    expect(listed.body.map((key: { id: string }) => key.id)[0]).toBe(added.body.id);
    expect(listed.body).toHaveLength(2);
    for (const key of listed.body) expect(Object.keys(key).sort()).toEqual(["created_at", "expires_at", "id"]);
    expect(JSON.stringify(listed.body)).not.toContain(added.body.key);
    expect(JSON.stringify(listed.body)).not.toContain(app.key);
  });

  it("GET /applications/{id}/keys/{key_id} answers the key without its secret", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const added = await call("POST", `/applications/${app.id}/keys`, {
      key: tenant.managementKey,
      body: { expires_at: "2099-01-01T00:00:00Z" },
    });
    const read = await call("GET", `/applications/${app.id}/keys/${added.body.id}`, { key: tenant.managementKey });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body).toEqual({ id: added.body.id, created_at: added.body.created_at, expires_at: "2099-01-01T00:00:00.000Z" });
  });

  it("a key of another application, of another tenant, a revoked or unknown key is a 404; an id that is not a UUID a 400", async () => {
    const tenant = await seedTenant();
    const other = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const sibling = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const [siblingKey] = (await call("GET", `/applications/${sibling.id}/keys`, { key: tenant.managementKey })).body;
    const [ownKey] = (await call("GET", `/applications/${app.id}/keys`, { key: tenant.managementKey })).body;
    expectProblem(await call("GET", `/applications/${app.id}/keys/${siblingKey.id}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("GET", `/applications/${app.id}/keys/${ownKey.id}`, { key: other.managementKey }), 404);
    expectProblem(await call("GET", `/applications/${app.id}/keys/${UNKNOWN_ID}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("GET", `/applications/${app.id}/keys/not-a-uuid`, { key: tenant.managementKey }), 400);
    await call("DELETE", `/applications/${app.id}/keys/${ownKey.id}`, { key: tenant.managementKey });
    expectProblem(await call("GET", `/applications/${app.id}/keys/${ownKey.id}`, { key: tenant.managementKey }), 404);
  });

  it("needs application:read (403 naming it), and a key (401)", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const [key] = (await call("GET", `/applications/${app.id}/keys`, { key: tenant.managementKey })).body;
    const problem = expectProblem(await call("GET", `/applications/${app.id}/keys/${key.id}`, { key: app.key }), 403);
    expect(problem.detail).toContain("application:read");
    expectProblem(await call("GET", `/applications/${app.id}/keys/${key.id}`), 401);
  });
});
