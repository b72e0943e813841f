import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts, seedTenant } from "../support/harness";

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

describe("applications: create", () => {
  it("creates an application and returns its key once", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "Checkout", type: "private", permissions: ["token:create", "token:read"] },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      tenant_id: tenant.tenantId,
      name: "Checkout",
      type: "private",
      permissions: ["token:create", "token:read"],
      rules: [],
      created_by: tenant.managementApplicationId,
      created_at: expect.stringMatching(/Z$/),
      modified_by: null,
      modified_at: null,
    });
    expect(reply.body.keys).toHaveLength(1);
    expect(reply.body.keys[0].key).toMatch(/^key_[A-Za-z0-9_-]{43}$/);

    const read = await call("GET", `/applications/${reply.body.id}`, { key: tenant.managementKey });
    expect(read.status).toBe(200);
    expect(read.body.keys).toBeUndefined();
  });

  it("accepts access rules and derives the permissions from them", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: {
        name: "Rules",
        type: "private",
        rules: [
          { description: "pci masked", priority: 1, container: "/pci/", transform: "mask", permissions: ["token:read"] },
          { priority: 2, container: "/", transform: "reveal", permissions: ["token:use", "token:read"] },
        ],
      },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.permissions.sort()).toEqual(["token:read", "token:use"]);
    expect(reply.body.rules[0]).toMatchObject({ container: "/pci/", transform: "mask" });
  });

  it.each([
    ["name missing", { type: "private" }, "name"],
    ["name empty", { name: " ", type: "private" }, "name"],
    ["name over 200 characters", { name: "x".repeat(201), type: "private" }, "name"],
    ["name of the wrong type", { name: 42, type: "private" }, "name"],
    ["type missing", { name: "a" }, "type"],
    ["unknown type", { name: "a", type: "admin" }, "type"],
    ["unknown permission", { name: "a", type: "private", permissions: ["token:fly"] }, "permissions[0]"],
    ["permissions not an array", { name: "a", type: "private", permissions: "token:read" }, "permissions"],
    ["public application holding token:read", { name: "a", type: "public", permissions: ["token:read"] }, "permissions[0]"],
    ["private application holding proxy:create", { name: "a", type: "private", permissions: ["proxy:create"] }, "permissions[0]"],
    ["management application holding token:use", { name: "a", type: "management", permissions: ["token:use"] }, "permissions[0]"],
    [
      "rule with an invalid container",
      { name: "a", type: "private", rules: [{ priority: 1, container: "pci", transform: "mask", permissions: ["token:read"] }] },
      "rules[0].container",
    ],
    [
      "rule with an unknown transform",
      { name: "a", type: "private", rules: [{ priority: 1, container: "/a/", transform: "show", permissions: ["token:read"] }] },
      "rules[0].transform",
    ],
    [
      "rule without permissions",
      { name: "a", type: "private", rules: [{ priority: 1, container: "/a/", transform: "mask", permissions: [] }] },
      "rules[0].permissions",
    ],
    [
      "rule permission the type may not hold",
      { name: "a", type: "public", rules: [{ priority: 1, container: "/a/", transform: "mask", permissions: ["token:use"] }] },
      "rules[0].permissions[0]",
    ],
    [
      "two rules with the same priority",
      {
        name: "a",
        type: "private",
        rules: [
          { priority: 1, container: "/a/", transform: "mask", permissions: ["token:read"] },
          { priority: 1, container: "/b/", transform: "mask", permissions: ["token:read"] },
        ],
      },
      "rules[1].priority",
    ],
    [
      "both permissions and rules",
      {
        name: "a",
        type: "private",
        permissions: ["token:read"],
        rules: [{ priority: 1, container: "/a/", transform: "mask", permissions: ["token:read"] }],
      },
      "permissions",
    ],
  ])("refuses %s with a 400 naming the field", async (_case, body, field) => {
    const tenant = await seedTenant();
    const before = await rowCounts();
    const problem = expectProblem(await call("POST", "/applications", { key: tenant.managementKey, body }), 400);
    expect(Object.keys(problem.errors ?? {})).toContain(field);
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses malformed JSON with a 400", async () => {
    const tenant = await seedTenant();
    const problem = expectProblem(await call("POST", "/applications", { key: tenant.managementKey, raw: '{"name": ' }), 400);
    expect(problem.detail).toMatch(/JSON/i);
  });

  it("refuses a body that is not JSON with a 415", async () => {
    const tenant = await seedTenant();
    expectProblem(
      await call("POST", "/applications", { key: tenant.managementKey, raw: "name=a", contentType: "application/x-www-form-urlencoded" }),
      415,
    );
  });
});

describe("applications: read and list", () => {
  it("returns 404 for an unknown id and 400 for an id that is not a UUID", async () => {
    const tenant = await seedTenant();
    expectProblem(await call("GET", `/applications/${UNKNOWN_ID}`, { key: tenant.managementKey }), 404);
    const problem = expectProblem(await call("GET", "/applications/not-a-uuid", { key: tenant.managementKey }), 400);
    expect(problem.errors).toHaveProperty("id");
  });

  it("never shows another tenant's application (404, not 403)", async () => {
    const owner = await seedTenant();
    const other = await seedTenant();
    const app = await createApplication(owner, { type: "private", permissions: ["token:read"] });
    expectProblem(await call("GET", `/applications/${app.id}`, { key: other.managementKey }), 404);
    expectProblem(await call("PUT", `/applications/${app.id}`, { key: other.managementKey, body: { name: "x", permissions: [] } }), 404);
    expectProblem(await call("DELETE", `/applications/${app.id}`, { key: other.managementKey }), 404);
    expectProblem(await call("GET", `/applications/${app.id}/keys`, { key: other.managementKey }), 404);
    expectProblem(await call("POST", `/applications/${app.id}/keys`, { key: other.managementKey }), 404);
    const list = await call("GET", `/applications?id=${app.id}`, { key: other.managementKey });
    expect(list.body.data).toEqual([]);
  });

  it("lists newest first with pagination", async () => {
    const tenant = await seedTenant();
    for (const name of ["one", "two", "three"]) await createApplication(tenant, { name, type: "public" });
    const first = await call("GET", "/applications?size=2", { key: tenant.managementKey });
    expect(first.status).toBe(200);
    expect(first.body.pagination).toEqual({ total_items: 4, page_number: 1, page_size: 2, total_pages: 2 });
    expect(first.body.data.map((app: { name: string }) => app.name)).toEqual(["three", "two"]);
    const second = await call("GET", "/applications?size=2&page=2", { key: tenant.managementKey });
    expect(second.body.data.map((app: { name: string }) => app.name)).toEqual(["one", expect.stringContaining("management")]);
  });

  it("filters by repeated id and by name with * as the only wildcard", async () => {
    const tenant = await seedTenant();
    const a = await createApplication(tenant, { name: "Billing API", type: "public" });
    const b = await createApplication(tenant, { name: "Billing_Batch", type: "public" });
    await createApplication(tenant, { name: "Support", type: "public" });
    const byId = await call("GET", `/applications?id=${a.id}&id=${b.id}`, { key: tenant.managementKey });
    expect(byId.body.data.map((app: { id: string }) => app.id).sort()).toEqual([a.id, b.id].sort());
    const byName = await call("GET", "/applications?name=billing*", { key: tenant.managementKey });
    expect(byName.body.data).toHaveLength(2);
    const literalUnderscore = await call("GET", "/applications?name=Billing_*", { key: tenant.managementKey });
    expect(literalUnderscore.body.data.map((app: { name: string }) => app.name)).toEqual(["Billing_Batch"]);
    const exact = await call("GET", "/applications?name=support", { key: tenant.managementKey });
    expect(exact.body.data).toHaveLength(1);
  });

  it.each([
    ["page=0", "page"],
    ["size=0", "size"],
    ["size=101", "size"],
    ["page=abc", "page"],
    ["id=nope", "id[0]"],
  ])("refuses the list query %s with a 400", async (query, field) => {
    const tenant = await seedTenant();
    const problem = expectProblem(await call("GET", `/applications?${query}`, { key: tenant.managementKey }), 400);
    expect(Object.keys(problem.errors ?? {})).toContain(field);
  });

  it("accepts trailing slashes", async () => {
    const tenant = await seedTenant();
    expect((await call("GET", "/applications/", { key: tenant.managementKey })).status).toBe(200);
    expect((await call("GET", `/applications/${tenant.managementApplicationId}/`, { key: tenant.managementKey })).status).toBe(200);
  });
});

describe("applications: update and delete", () => {
  it("replaces name, permissions and rules, and records who modified it", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const reply = await call("PUT", `/applications/${app.id}`, {
      key: tenant.managementKey,
      body: { name: "Renamed", permissions: ["token:search"] },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      name: "Renamed",
      permissions: ["token:search"],
      modified_by: tenant.managementApplicationId,
      modified_at: expect.any(String),
    });
  });

  it("refuses to change the type, and validates permissions against the existing type", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const typeChange = expectProblem(
      await call("PUT", `/applications/${app.id}`, { key: tenant.managementKey, body: { name: "a", type: "private" } }),
      400,
    );
    expect(typeChange.errors).toHaveProperty("type");
    const badPermission = expectProblem(
      await call("PUT", `/applications/${app.id}`, { key: tenant.managementKey, body: { name: "a", permissions: ["token:use"] } }),
      400,
    );
    expect(badPermission.errors).toHaveProperty("permissions[0]");
  });

  it("deletes an application and revokes its keys at once", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const deleted = await call("DELETE", `/applications/${app.id}`, { key: tenant.managementKey });
    expect(deleted.status).toBe(204);
    expectProblem(await call("GET", `/applications/${app.id}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("GET", "/permissions", { key: app.key }), 401);
  });

  it("refuses to let an application delete itself", async () => {
    const tenant = await seedTenant();
    expectProblem(await call("DELETE", `/applications/${tenant.managementApplicationId}`, { key: tenant.managementKey }), 409);
  });
});

describe("applications: the original interface's key member", () => {
  it("the create response holds the new key as key, and the same key with its id in keys", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "Checkout", type: "private", permissions: ["token:create"] },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.key).toMatch(/^key_[A-Za-z0-9_-]{43}$/);
    expect(reply.body.keys).toEqual([
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), key: reply.body.key, created_at: reply.body.created_at, expires_at: null },
    ]);
    expect((await call("GET", "/permissions", { key: reply.body.key })).status).toBe(200);
  });
});

describe("applications: GET /applications/key", () => {
  it("answers the calling key's own application, without keys", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { name: "Checkout", type: "private", permissions: ["token:read"] });
    const reply = await call("GET", "/applications/key", { key: app.key });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({
      id: app.id,
      tenant_id: tenant.tenantId,
      name: "Checkout",
      type: "private",
      permissions: ["token:read"],
      rules: [],
      allowed_origins: [],
      created_by: tenant.managementApplicationId,
      created_at: expect.any(String),
      modified_by: null,
      modified_at: null,
    });
  });

  it("needs no permission beyond a valid key: a public application reads itself", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    expect((await call("GET", "/applications/key", { key: app.key })).body.id).toBe(app.id);
  });

  it("is 401 without a key or with an unknown one", async () => {
    expectProblem(await call("GET", "/applications/key"), 401);
    expectProblem(await call("GET", "/applications/key", { key: `key_${"x".repeat(43)}` }), 401);
  });

  it("accepts a trailing slash", async () => {
    const tenant = await seedTenant();
    expect((await call("GET", "/applications/key/", { key: tenant.managementKey })).body.id).toBe(tenant.managementApplicationId);
  });
});

describe("applications: POST /applications/{id}/regenerate", () => {
  it("answers the application with one new key and revokes every previous key at once", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const second = await call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    expect((await call("GET", "/applications/key", { key: app.key })).status).toBe(200);

    const reply = await call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      id: app.id,
      type: "private",
      permissions: ["token:read"],
      key: expect.stringMatching(/^key_[A-Za-z0-9_-]{43}$/),
      modified_by: tenant.managementApplicationId,
      modified_at: expect.any(String),
    });
    expect(reply.body.keys).toEqual([{ id: expect.any(String), key: reply.body.key, created_at: expect.any(String), expires_at: null }]);
    expect([app.key, second.body.key]).not.toContain(reply.body.key);

    expectProblem(await call("GET", "/applications/key", { key: app.key }), 401);
    expectProblem(await call("GET", "/applications/key", { key: second.body.key }), 401);
    expect((await call("GET", "/applications/key", { key: reply.body.key })).body.id).toBe(app.id);
    const keys = await call("GET", `/applications/${app.id}/keys`, { key: tenant.managementKey });
    expect(keys.body.map((key: { id: string }) => key.id)).toEqual([reply.body.keys[0].id]);
  });

  it("regenerating the caller's own application revokes the calling key too; the answered key takes over", async () => {
    const tenant = await seedTenant();
    const admin = await createApplication(tenant, { type: "management", permissions: ["application:update"] });
    const reply = await call("POST", `/applications/${admin.id}/regenerate`, { key: admin.key });
    expect(reply.status).toBe(200);
    expectProblem(await call("GET", "/applications/key", { key: admin.key }), 401);
    expect((await call("GET", "/applications/key", { key: reply.body.key })).body.id).toBe(admin.id);
  });

  it("with an idempotency key, a retry answers the same new key instead of replacing it again", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const headers = { "SVC-IDEMPOTENCY-KEY": "regenerate-1" };
    const first = await call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey, headers });
    const retry = await call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey, headers });
    expect(retry.status).toBe(200);
    expect(retry.body.key).toBe(first.body.key);
    expect((await call("GET", "/applications/key", { key: first.body.key })).status).toBe(200);
  });

  it("needs application:update (403 naming it)", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const creator = await createApplication(tenant, { type: "management", permissions: ["application:create", "application:read"] });
    const problem = expectProblem(await call("POST", `/applications/${app.id}/regenerate`, { key: creator.key }), 403);
    expect(problem.detail).toContain("application:update");
    expect((await call("GET", "/applications/key", { key: app.key })).status).toBe(200);
  });

  it("is 401 without a key", async () => {
    expectProblem(await call("POST", `/applications/${UNKNOWN_ID}/regenerate`), 401);
  });

  it("is 404 for an unknown id and for another tenant's application, whose keys keep working", async () => {
    const [tenant, stranger] = [await seedTenant(), await seedTenant()];
    const foreign = await createApplication(stranger, { type: "private", permissions: ["token:read"] });
    expectProblem(await call("POST", `/applications/${UNKNOWN_ID}/regenerate`, { key: tenant.managementKey }), 404);
    expectProblem(await call("POST", `/applications/${foreign.id}/regenerate`, { key: tenant.managementKey }), 404);
    expect((await call("GET", "/applications/key", { key: foreign.key })).status).toBe(200);
  });

  it("is 400 for an id that is not a UUID", async () => {
    const tenant = await seedTenant();
    const problem = expectProblem(await call("POST", "/applications/not-a-uuid/regenerate", { key: tenant.managementKey }), 400);
    expect(problem.errors).toEqual({ id: ["must be a UUID"] });
  });
});

describe("permissions: GET /permissions?application_type=", () => {
  it.each([
    ["public", ["token:create", "token:update", "token-intent:create", "google-pay:create", "apple-pay:create", "apple-pay:session"]],
    [
      "private",
      [
        "token:create",
        "token:read",
        "token:update",
        "token:delete",
        "token:search",
        "token:use",
        "token-intent:create",
        "token-intent:read",
        "token-intent:delete",
        "session:authorize",
        "google-pay:create",
        "apple-pay:create",
        "documents:create",
        "documents:read",
        "documents:reveal",
        "documents:delete",
        "apple-pay:read",
        "apple-pay:reveal",
        "apple-pay:delete",
        "google-pay:read",
        "google-pay:reveal",
        "google-pay:delete",
        "apple-pay:session",
      ],
    ],
    ["expiring", ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"]],
  ])("lists only the permissions a %s application may hold", async (type, expected) => {
    const tenant = await seedTenant();
    const reply = await call("GET", `/permissions?application_type=${type}`, { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body.map((permission: { type: string }) => permission.type)).toEqual(expected);
    for (const permission of reply.body) expect(permission.application_types).toContain(type);
  });

  it("lists the management permissions for management", async () => {
    const tenant = await seedTenant();
    const reply = await call("GET", "/permissions?application_type=management", { key: tenant.managementKey });
    expect(reply.body).toHaveLength(26);
    expect(reply.body[0]).toEqual({
      type: "application:create",
      description: "Create applications and their keys",
      application_types: ["management"],
    });
  });

  it("lists every permission without the filter", async () => {
    const tenant = await seedTenant();
    expect((await call("GET", "/permissions", { key: tenant.managementKey })).body).toHaveLength(49);
  });

  it("refuses an unknown application type with a 400 naming the field", async () => {
    const tenant = await seedTenant();
    const problem = expectProblem(await call("GET", "/permissions?application_type=temporary", { key: tenant.managementKey }), 400);
    expect(problem.errors).toEqual({ application_type: ["must be one of private, public, management, expiring"] });
  });
});

describe("applications: OpenAPI", () => {
  it("documents /applications/key, regenerate, the created key and the application_type filter", async () => {
    const { paths, components } = (await call("GET", "/openapi.json")).body;
    expect(Object.keys(paths["/applications/key"])).toEqual(["get"]);
    expect(Object.keys(paths["/applications/{id}/regenerate"].post.responses)).toContain("200");
    expect(paths["/applications/{id}/regenerate"].post.tags).toEqual(["Applications"]);
    expect(components.schemas.CreatedApplication.allOf[1].required).toEqual(["key", "keys"]);
    expect(paths["/permissions"].get.parameters).toContainEqual(
      expect.objectContaining({
        name: "application_type",
        in: "query",
        schema: expect.objectContaining({ enum: ["private", "public", "management", "expiring"] }),
      }),
    );
  });
});
