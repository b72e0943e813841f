import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts, seedTenant } from "../support/harness";

/*
 * GET and PUT /tenants/self: a management key reads and renames its own tenant (tenant:read,
 * tenant:update), as the original interface's clients do (`client.tenants.self`).
 */

describe("tenants: GET /tenants/self", () => {
  it("answers the caller's own tenant: its id, name and times", async () => {
    const tenant = await seedTenant("Acme Payments");
    const reply = await call("GET", "/tenants/self", { key: tenant.managementKey });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({
      id: tenant.tenantId,
      name: "Acme Payments",
      created_by: null,
      created_at: expect.stringMatching(/Z$/),
      modified_by: null,
      modified_at: null,
    });
  });

  it("a new tenant's management application holds tenant:read and tenant:update", async () => {
    const tenant = await seedTenant();
    const application = await call("GET", "/applications/key", { key: tenant.managementKey });
    expect(application.body.permissions).toEqual(expect.arrayContaining(["tenant:read", "tenant:update"]));
  });

  it("needs tenant:read: a private key and a management key without it get a 403 naming it", async () => {
    const tenant = await seedTenant();
    const tokens = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const manager = await createApplication(tenant, { type: "management", permissions: ["application:read"] });
    for (const key of [tokens.key, manager.key]) {
      expect(expectProblem(await call("GET", "/tenants/self", { key }), 403).detail).toContain("tenant:read");
    }
    expectProblem(await call("GET", "/tenants/self"), 401);
  });
});

describe("tenants: PUT /tenants/self", () => {
  it("renames the caller's tenant and records which application did; GET reads the new name", async () => {
    const tenant = await seedTenant("Old name");
    const reply = await call("PUT", "/tenants/self", { key: tenant.managementKey, body: { name: "  New name  " } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      id: tenant.tenantId,
      name: "New name",
      modified_by: tenant.managementApplicationId,
      modified_at: expect.stringMatching(/Z$/),
    });
    expect((await call("GET", "/tenants/self", { key: tenant.managementKey })).body).toEqual(reply.body);
  });

  it("renames only the caller's tenant", async () => {
    const tenant = await seedTenant("Mine");
    const other = await seedTenant("Theirs");
    await call("PUT", "/tenants/self", { key: tenant.managementKey, body: { name: "Renamed" } });
    expect((await call("GET", "/tenants/self", { key: other.managementKey })).body).toMatchObject({ id: other.tenantId, name: "Theirs" });
  });

  it("needs tenant:update (403 naming it); tenant:read is not enough", async () => {
    const tenant = await seedTenant();
    const reader = await createApplication(tenant, { type: "management", permissions: ["tenant:read"] });
    const problem = expectProblem(await call("PUT", "/tenants/self", { key: reader.key, body: { name: "x" } }), 403);
    expect(problem.detail).toContain("tenant:update");
    expect((await call("GET", "/tenants/self", { key: reader.key })).status).toBe(200);
  });

  it.each([
    ["no name", {}, "name"],
    ["an empty name", { name: " " }, "name"],
    ["a name over 200 characters", { name: "x".repeat(201) }, "name"],
    ["settings, which this vault does not have", { name: "x", settings: { deduplicate_tokens: "true" } }, "settings"],
  ])("refuses %s with a 400 naming it, and changes nothing", async (_case, body, field) => {
    const tenant = await seedTenant("Unchanged");
    const before = await rowCounts();
    const problem = expectProblem(await call("PUT", "/tenants/self", { key: tenant.managementKey, body }), 400);
    expect(problem.errors).toHaveProperty(field);
    expect(await rowCounts()).toEqual(before);
    expect((await call("GET", "/tenants/self", { key: tenant.managementKey })).body.name).toBe("Unchanged");
  });

  it("tenant:read and tenant:update are management permissions: a private application may not hold them", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "x", type: "private", permissions: ["tenant:read"] },
    });
    expect(expectProblem(reply, 400).errors).toHaveProperty(["permissions[0]"]);
  });
});
