import { describe, expect, it } from "vitest";
import { call, createApplication, dumpDatabase, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { createFormula, createReactor, officialFormula } from "../support/reactors";

const CONTRACT = [
  { name: "merchant_id", type: "string" },
  { name: "limit", type: "number" },
  { name: "live", type: "boolean" },
];
const VALID_CONFIGURATION = { merchant_id: "m-42", limit: 250, live: false };

async function postReactor(tenant: Tenant, body: Record<string, unknown>) {
  return call("POST", "/reactors", { key: tenant.managementKey, body: { name: "reactor", ...body } });
}

async function formulaWithContract(tenant: Tenant) {
  return createFormula(tenant, { configuration: CONTRACT });
}

describe("reactor validation", () => {
  it("name is required and at most 200 characters", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    expect(Object.keys(expectProblem(await postReactor(tenant, { name: undefined, formula: { id: formula.id } }), 400).errors!)).toEqual([
      "name",
    ]);
    expect(
      Object.keys(expectProblem(await postReactor(tenant, { name: "r".repeat(201), formula: { id: formula.id } }), 400).errors!),
    ).toEqual(["name"]);
  });

  it("formula is required as {id}", async () => {
    const tenant = await seedTenant();
    expect(expectProblem(await postReactor(tenant, {}), 400).errors).toHaveProperty("formula");
    expect(expectProblem(await postReactor(tenant, { formula: { id: "nope" } }), 400).errors).toHaveProperty(["formula.id"]);
  });

  it("the formula must be official or the tenant's own", async () => {
    const [tenant, stranger] = [await seedTenant(), await seedTenant()];
    const foreign = await createFormula(stranger);
    const problem = expectProblem(await postReactor(tenant, { formula: { id: foreign.id } }), 400);
    expect(problem.errors).toHaveProperty(["formula.id"]);
    expectProblem(await postReactor(tenant, { formula: { id: crypto.randomUUID() } }), 400);
  });

  it("a coming_soon formula cannot be used by a reactor", async () => {
    const tenant = await seedTenant();
    const comingSoon = officialFormula("Card account updater");
    const problem = expectProblem(await postReactor(tenant, { formula: { id: comingSoon.id } }), 400);
    expect(problem.errors!["formula.id"]![0]).toContain("coming_soon");
  });

  it("every name the formula's configuration declares must be present", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const problem = expectProblem(await postReactor(tenant, { formula: { id: formula.id }, configuration: { merchant_id: "m-42" } }), 400);
    expect(Object.keys(problem.errors!).sort()).toEqual(["configuration.limit", "configuration.live"]);
  });

  it("configuration values must be of the declared type", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const problem = expectProblem(
      await postReactor(tenant, { formula: { id: formula.id }, configuration: { merchant_id: "m", limit: "lots", live: "yes" } }),
      400,
    );
    expect(Object.keys(problem.errors!).sort()).toEqual(["configuration.limit", "configuration.live"]);
    expect(problem.errors!["configuration.limit"]![0]).toContain("must be a number");
  });

  it("configuration values are scalars: objects, arrays and null are refused", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    for (const merchant_id of [{ id: 1 }, ["m"], null]) {
      const reply = await postReactor(tenant, { formula: { id: formula.id }, configuration: { ...VALID_CONFIGURATION, merchant_id } });
      expect(expectProblem(reply, 400).errors).toHaveProperty(["configuration.merchant_id"]);
    }
  });

  it("strings that convert losslessly are accepted and stored as the declared type", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const reactor = await createReactor(tenant, formula.id, { configuration: { merchant_id: 42, limit: "250", live: "true" } });
    expect(reactor.configuration).toEqual({ merchant_id: "42", limit: 250, live: true });
  });

  it("strings that would not come back the same are refused for numbers", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    for (const limit of ["0250", "1.50", " 250", "1e3", "Infinity"]) {
      const reply = await postReactor(tenant, { formula: { id: formula.id }, configuration: { ...VALID_CONFIGURATION, limit } });
      expect(expectProblem(reply, 400).errors, limit).toHaveProperty(["configuration.limit"]);
    }
  });

  it("names the formula does not declare are refused", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const problem = expectProblem(
      await postReactor(tenant, { formula: { id: formula.id }, configuration: { ...VALID_CONFIGURATION, extra: "x" } }),
      400,
    );
    expect(Object.keys(problem.errors!)).toEqual(["configuration.extra"]);
  });

  it("the application must be a public or private application of the tenant", async () => {
    const [tenant, stranger] = [await seedTenant(), await seedTenant()];
    const formula = await createFormula(tenant);
    const management = await createApplication(tenant, { type: "management", permissions: ["reactor:read"] });
    const foreign = await createApplication(stranger, { type: "private", permissions: ["token:use"] });
    for (const id of [management.id, foreign.id, crypto.randomUUID()]) {
      const problem = expectProblem(await postReactor(tenant, { formula: { id: formula.id }, application: { id } }), 400);
      expect(Object.keys(problem.errors!)).toEqual(["application.id"]);
    }
    const publicApp = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const privateApp = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    expect((await createReactor(tenant, formula.id, { applicationId: publicApp.id })).application_id).toBe(publicApp.id);
    expect((await createReactor(tenant, formula.id, { applicationId: privateApp.id })).application_id).toBe(privateApp.id);
  });
});

describe("reactors", () => {
  it("the response holds the formula, the application object and application_id", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const application = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const reactor = await createReactor(tenant, formula.id, {
      configuration: VALID_CONFIGURATION,
      applicationId: application.id,
      name: "Payouts",
    });
    expect(reactor).toMatchObject({
      name: "Payouts",
      tenant_id: tenant.tenantId,
      formula: { id: formula.id, name: formula.name, configuration: formula.configuration },
      configuration: VALID_CONFIGURATION,
      application: {
        id: application.id,
        tenant_id: tenant.tenantId,
        name: "private app",
        type: "private",
        permissions: ["token:create"],
        rules: [],
      },
      application_id: application.id,
      created_by: tenant.managementApplicationId,
    });
    expect(reactor.application).not.toHaveProperty("key");
    expect(reactor.application).not.toHaveProperty("keys");
    expect((await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey })).body).toEqual(reactor);
    const listed = await call("GET", "/reactors", { key: tenant.managementKey });
    expect(listed.body.data).toEqual([reactor]);
  });

  it("application is null without one, and once the application is deleted", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    expect((await createReactor(tenant, formula.id)).application).toBeNull();
    const application = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const reactor = await createReactor(tenant, formula.id, { applicationId: application.id });
    expect((await call("DELETE", `/applications/${application.id}`, { key: tenant.managementKey })).status).toBe(204);
    const read = await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey });
    expect(read.body).toMatchObject({ application: null, application_id: application.id });
  });

  it("a reactor can be made from an official formula", async () => {
    const tenant = await seedTenant();
    const official = officialFormula("Re-tokenize into a container");
    const reactor = await createReactor(tenant, official.id, { configuration: { container: "/vault/copies/" } });
    expect(reactor.formula).toMatchObject({ id: official.id, type: "official" });
  });

  it("configuration is stored encrypted", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, { configuration: [{ name: "api_secret", type: "string" }] });
    const secret = `sk_live_${crypto.randomUUID()}`;
    await createReactor(tenant, formula.id, { configuration: { api_secret: secret } });
    expect(await dumpDatabase()).not.toContain(secret);
  });

  it("PUT replaces the reactor, checked like a new one", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const other = await createFormula(tenant, { name: "Other" });
    const reactor = await createReactor(tenant, formula.id, { configuration: VALID_CONFIGURATION });
    const invalid = await call("PUT", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "Moved", formula: { id: formula.id }, configuration: {} },
    });
    expect(Object.keys(expectProblem(invalid, 400).errors!).length).toBe(3);
    const moved = await call("PUT", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "Moved", formula: { id: other.id } },
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body).toMatchObject({ name: "Moved", formula: { id: other.id }, configuration: {}, application_id: null });
    expect(moved.body.modified_by).toBe(tenant.managementApplicationId);
  });

  it("PUT without formula keeps the reactor's formula, as the original interface's update sends none", async () => {
    const tenant = await seedTenant();
    const formula = await formulaWithContract(tenant);
    const application = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const reactor = await createReactor(tenant, formula.id, { configuration: VALID_CONFIGURATION });
    const reply = await call("PUT", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "Renamed", configuration: { ...VALID_CONFIGURATION, limit: 10 }, application: { id: application.id } },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      name: "Renamed",
      formula: { id: formula.id },
      configuration: { ...VALID_CONFIGURATION, limit: 10 },
      application: { id: application.id, type: "private" },
      application_id: application.id,
    });
    const unfit = await call("PUT", `/reactors/${reactor.id}`, { key: tenant.managementKey, body: { name: "Renamed", configuration: {} } });
    expect(Object.keys(expectProblem(unfit, 400).errors!).sort()).toEqual([
      "configuration.limit",
      "configuration.live",
      "configuration.merchant_id",
    ]);
  });

  it("PATCH merges configuration; null removes a value or the application", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, {
      configuration: [
        { name: "merchant_id", type: "string" },
        { name: "limit", type: "number" },
      ],
    });
    const application = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const reactor = await createReactor(tenant, formula.id, {
      configuration: { merchant_id: "m-1", limit: 5 },
      applicationId: application.id,
    });
    const patch = (body: unknown) =>
      call("PATCH", `/reactors/${reactor.id}`, { key: tenant.managementKey, body, contentType: "application/merge-patch+json" });
    const read = async () => (await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey })).body;

    const merged = await patch({ configuration: { limit: "10" } });
    expect(merged.status, JSON.stringify(merged.body)).toBe(204);
    expect(await read()).toMatchObject({
      name: "reactor",
      configuration: { merchant_id: "m-1", limit: 10 },
      application_id: application.id,
    });

    const removed = await patch({ configuration: { limit: null } });
    expect(expectProblem(removed, 400).errors).toHaveProperty(["configuration.limit"]);

    expect((await patch({ application: null, name: "Renamed" })).status).toBe(204);
    expect(await read()).toMatchObject({ name: "Renamed", application_id: null, configuration: { merchant_id: "m-1", limit: 10 } });
  });

  it("PATCH answers 204 with no body, as the original interface does", async () => {
    const tenant = await seedTenant();
    const reactor = await createReactor(tenant, (await createFormula(tenant)).id);
    const reply = await call("PATCH", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "Renamed" },
      contentType: "application/merge-patch+json",
    });
    expect(reply.status).toBe(204);
    expect(reply.body).toBeNull();
    expect(reply.headers.get("content-type")).toBeNull();
  });

  it("PATCH takes application/merge-patch+json (415 otherwise)", async () => {
    const tenant = await seedTenant();
    const reactor = await createReactor(tenant, (await createFormula(tenant)).id);
    expectProblem(await call("PATCH", `/reactors/${reactor.id}`, { key: tenant.managementKey, body: { name: "x" } }), 415);
  });

  it("lists the tenant's reactors only, paginated, with a name filter", async () => {
    const [tenant, stranger] = [await seedTenant(), await seedTenant()];
    const formula = await createFormula(tenant);
    await createReactor(tenant, formula.id, { name: "Alpha one" });
    await createReactor(tenant, formula.id, { name: "Alpha two" });
    await createReactor(tenant, formula.id, { name: "Beta" });
    await createReactor(stranger, (await createFormula(stranger)).id, { name: "Alpha foreign" });
    const all = await call("GET", "/reactors", { key: tenant.managementKey });
    expect(all.body.pagination.total_items).toBe(3);
    expect(all.body.data[0]).toMatchObject({ name: "Beta", formula: { id: formula.id } });
    const alphas = await call("GET", "/reactors?name=alpha*&size=1&page=2", { key: tenant.managementKey });
    expect(alphas.body.pagination).toEqual({ total_items: 2, page_number: 2, page_size: 1, total_pages: 2 });
    expect(alphas.body.data.map((reactor: { name: string }) => reactor.name)).toEqual(["Alpha one"]);
  });

  it("lists filtered by repeated id", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    const [first, , third] = [
      await createReactor(tenant, formula.id, { name: "one" }),
      await createReactor(tenant, formula.id, { name: "two" }),
      await createReactor(tenant, formula.id, { name: "three" }),
    ];
    const reply = await call("GET", `/reactors?id=${first.id}&id=${third.id}`, { key: tenant.managementKey });
    expect(reply.body.data.map((reactor: { name: string }) => reactor.name)).toEqual(["three", "one"]);
    const problem = expectProblem(await call("GET", "/reactors?id=nope", { key: tenant.managementKey }), 400);
    expect(Object.keys(problem.errors!)[0]).toMatch(/^id/);
  });

  it("another tenant's reactor is 404 for every operation", async () => {
    const [owner, stranger] = [await seedTenant(), await seedTenant()];
    const formula = await createFormula(owner);
    const reactor = await createReactor(owner, formula.id);
    const strangerFormula = await createFormula(stranger);
    const key = stranger.managementKey;
    expectProblem(await call("GET", `/reactors/${reactor.id}`, { key }), 404);
    expectProblem(await call("PUT", `/reactors/${reactor.id}`, { key, body: { name: "x", formula: { id: strangerFormula.id } } }), 404);
    expectProblem(
      await call("PATCH", `/reactors/${reactor.id}`, { key, body: { name: "x" }, contentType: "application/merge-patch+json" }),
      404,
    );
    expectProblem(await call("DELETE", `/reactors/${reactor.id}`, { key }), 404);
    expect((await call("GET", `/reactors/${reactor.id}`, { key: owner.managementKey })).body.name).toBe("reactor");
  });

  it("DELETE removes the reactor (204), then it is 404", async () => {
    const tenant = await seedTenant();
    const reactor = await createReactor(tenant, (await createFormula(tenant)).id);
    expect((await call("DELETE", `/reactors/${reactor.id}`, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("DELETE", `/reactors/${reactor.id}`, { key: tenant.managementKey }), 404);
  });

  it("each operation needs its reactor permission (403 naming it)", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    const reactor = await createReactor(tenant, formula.id);
    const readOnly = await createApplication(tenant, { type: "management", permissions: ["reactor:read"] });
    const body = { name: "x", formula: { id: formula.id } };
    const cases: [string, string, unknown, string, string?][] = [
      ["POST", "/reactors", body, "reactor:create"],
      ["PUT", `/reactors/${reactor.id}`, body, "reactor:update"],
      ["PATCH", `/reactors/${reactor.id}`, { name: "x" }, "reactor:update", "application/merge-patch+json"],
      ["DELETE", `/reactors/${reactor.id}`, undefined, "reactor:delete"],
    ];
    for (const [method, path, requestBody, permission, contentType] of cases) {
      const problem = expectProblem(await call(method, path, { key: readOnly.key, body: requestBody, contentType }), 403);
      expect(problem.detail).toContain(permission);
    }
    expect((await call("GET", "/reactors", { key: readOnly.key })).status).toBe(200);
  });
});
