import { describe, expect, it } from "vitest";
import { OFFICIAL_FORMULAS } from "../../src/reactors/official";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { createFormula, createReactor, formulaBody, officialFormula } from "../support/reactors";

const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const JPEG_BYTES =
  "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/wAALCAABAAEBAREA/8QAFAABAAAAAAAAAAAAAAAAAAAACf/EABQQAQAAAAAAAAAAAAAAAAAAAAD/2gAIAQEAAD8AKp//2Q==";
const SVG = btoa('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>');

async function postFormula(tenant: Tenant, overrides: Record<string, unknown>) {
  return call("POST", "/reactor-formulas", { key: tenant.managementKey, body: formulaBody(overrides) });
}

/** A 400 whose `errors` name exactly the given field paths. */
async function expectFieldErrors(tenant: Tenant, overrides: Record<string, unknown>, paths: string[]) {
  const problem = expectProblem(await postFormula(tenant, overrides), 400);
  expect(Object.keys(problem.errors ?? {}).sort()).toEqual([...paths].sort());
  return problem;
}

describe("reactor formula validation", () => {
  it("name is required", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { name: undefined }, ["name"]);
  });

  it("name is at most 200 characters", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { name: "n".repeat(201) }, ["name"]);
    await createFormula(tenant, { name: "n".repeat(200) });
  });

  it("description is optional, at most 2000 characters, and reads back as null when absent", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { description: "d".repeat(2001) }, ["description"]);
    expect((await createFormula(tenant, { description: undefined })).description).toBeNull();
  });

  it("configuration and request_parameters hold at most 100 elements each", async () => {
    const tenant = await seedTenant();
    const elements = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `p${i}`, type: "string" }));
    await expectFieldErrors(tenant, { configuration: elements(101), request_parameters: elements(101) }, [
      "configuration",
      "request_parameters",
    ]);
    await createFormula(tenant, { configuration: elements(100), request_parameters: elements(100) });
  });

  it("type is required and is official or private", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { type: undefined }, ["type"]);
    await expectFieldErrors(tenant, { type: "public" }, ["type"]);
  });

  it("code is required and not empty", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { code: undefined }, ["code"]);
    await expectFieldErrors(tenant, { code: "" }, ["code"]);
  });

  it("the type of a configuration element is string, boolean or number", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { configuration: [{ name: "key", type: "object" }] }, ["configuration[0].type"]);
    await expectFieldErrors(tenant, { configuration: [{ name: "key" }] }, ["configuration[0].type"]);
    const formula = await createFormula(tenant, {
      configuration: [
        { name: "a", type: "string" },
        { name: "b", type: "boolean" },
        { name: "c", type: "number", description: "a count" },
      ],
    });
    expect(formula.configuration).toEqual([
      { name: "a", type: "string", description: null },
      { name: "b", type: "boolean", description: null },
      { name: "c", type: "number", description: "a count" },
    ]);
  });

  it("a configuration element needs a name", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { configuration: [{ type: "string" }] }, ["configuration[0].name"]);
    await expectFieldErrors(tenant, { configuration: [{ name: "", type: "string" }] }, ["configuration[0].name"]);
  });

  it("configuration names may not contain dots", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { configuration: [{ name: "api.key", type: "string" }] }, ["configuration[0].name"]);
  });

  it("duplicate configuration names are refused", async () => {
    const tenant = await seedTenant();
    const problem = await expectFieldErrors(
      tenant,
      {
        configuration: [
          { name: "key", type: "string" },
          { name: "key", type: "number" },
        ],
      },
      ["configuration[1].name"],
    );
    expect(problem.errors!["configuration[1].name"]![0]).toContain("duplicates");
  });

  it("the type of a request parameter is string, boolean or number, and optional is a boolean defaulting to false", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { request_parameters: [{ name: "a", type: "date" }] }, ["request_parameters[0].type"]);
    await expectFieldErrors(tenant, { request_parameters: [{ name: "a", type: "string", optional: "yes" }] }, [
      "request_parameters[0].optional",
    ]);
    const formula = await createFormula(tenant, { request_parameters: [{ name: "a", type: "string" }] });
    expect(formula.request_parameters).toEqual([{ name: "a", type: "string", description: null, optional: false }]);
  });

  it("request parameter names may contain dots: card.number is number inside card", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, {
      request_parameters: [
        { name: "card.number", type: "string" },
        { name: "card.expiration.month", type: "number", optional: true },
      ],
    });
    expect(formula.request_parameters.map((parameter: { name: string }) => parameter.name)).toEqual([
      "card.number",
      "card.expiration.month",
    ]);
  });

  it("request parameter names have no empty segment", async () => {
    const tenant = await seedTenant();
    for (const name of ["", "card..number", ".card", "card."]) {
      await expectFieldErrors(tenant, { request_parameters: [{ name, type: "string" }] }, ["request_parameters[0].name"]);
    }
  });

  it("duplicate request parameter names are refused", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(
      tenant,
      {
        request_parameters: [
          { name: "card.number", type: "string" },
          { name: "card.number", type: "string" },
        ],
      },
      ["request_parameters[1].name"],
    );
  });

  it("a request parameter cannot be nested inside one declared as a value", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(
      tenant,
      {
        request_parameters: [
          { name: "card", type: "string" },
          { name: "card.number", type: "string" },
        ],
      },
      ["request_parameters[1].name"],
    );
  });

  it("every validation error names the field path", async () => {
    const tenant = await seedTenant();
    const problem = await expectFieldErrors(
      tenant,
      {
        name: "",
        configuration: [
          { name: "ok", type: "string" },
          { name: "a.b", type: "list" },
        ],
        request_parameters: [{ name: "x", type: "string", optional: 1 }],
      },
      ["name", "configuration[1].name", "configuration[1].type", "request_parameters[0].optional"],
    );
    expect(problem.detail).toContain("configuration[1].name");
  });

  it("status is read-only: new formulas are verified whatever the body says", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, { status: "coming_soon" });
    expect(formula.status).toBe("verified");
    expect(formula.type).toBe("private");
  });

  it("records who created and who modified the formula", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    expect(formula).toMatchObject({ created_by: tenant.managementApplicationId, modified_by: null, modified_at: null });
    const updated = await call("PUT", `/reactor-formulas/${formula.id}`, {
      key: tenant.managementKey,
      body: formulaBody({ name: "Renamed" }),
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: "Renamed", modified_by: tenant.managementApplicationId, created_at: formula.created_at });
    expect(updated.body.modified_at).toEqual(expect.any(String));
  });
});

describe("reactor formula icons", () => {
  it("accepts a PNG data URL whose bytes are a PNG", async () => {
    const tenant = await seedTenant();
    const icon = `data:image/png;base64,${PNG_1X1}`;
    expect((await createFormula(tenant, { icon })).icon).toBe(icon);
  });

  it("accepts the icon of the original reactor formulas page, written with a space after the comma", async () => {
    const tenant = await seedTenant();
    const icon =
      "data:image/png;base64, iVBORw0KGgoAAAANSUhEUgAAAAUAAAAFCAYAAACNbyblAAAAHElEQVQI12P4//8/w38GIAXDIBKE0DHxgljNBAAO9TXL0Y4OHwAAAABJRU5ErkJggg==";
    expect((await createFormula(tenant, { icon })).icon).toBe(icon);
  });

  it("accepts a JPEG as image/jpeg and as image/jpg", async () => {
    const tenant = await seedTenant();
    await createFormula(tenant, { icon: `data:image/jpeg;base64,${JPEG_BYTES}` });
    await createFormula(tenant, { icon: `data:image/jpg;base64,${JPEG_BYTES}` });
  });

  it("refuses a PNG data URL whose bytes are a JPEG", async () => {
    const tenant = await seedTenant();
    const problem = await expectFieldErrors(tenant, { icon: `data:image/png;base64,${JPEG_BYTES}` }, ["icon"]);
    expect(problem.errors!.icon![0]).toContain("not a complete image/png image");
  });

  it("refuses a JPEG data URL whose bytes are a PNG", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { icon: `data:image/jpeg;base64,${PNG_1X1}` }, ["icon"]);
  });

  it("refuses bad base64", async () => {
    const tenant = await seedTenant();
    for (const payload of ["iVBORw0KGgo!", "iVBORw0KGgo", "iVBO Rw0K", "iVBORw0KGgo=A=="]) {
      const problem = await expectFieldErrors(tenant, { icon: `data:image/png;base64,${payload}` }, ["icon"]);
      expect(problem.errors!.icon![0]).toContain("base64");
    }
  });

  it("refuses a truncated PNG: the bytes must be a whole image, not only its signature", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { icon: `data:image/png;base64,${PNG_1X1.slice(0, 32)}` }, ["icon"]);
  });

  it("refuses an SVG", async () => {
    const tenant = await seedTenant();
    const problem = await expectFieldErrors(tenant, { icon: `data:image/svg+xml;base64,${SVG}` }, ["icon"]);
    expect(problem.errors!.icon![0]).toContain("image/png, image/jpeg, image/jpg");
  });

  it("refuses what is not a base64 data URL", async () => {
    const tenant = await seedTenant();
    await expectFieldErrors(tenant, { icon: "https://example.com/icon.png" }, ["icon"]);
    await expectFieldErrors(tenant, { icon: `data:image/png,${PNG_1X1}` }, ["icon"]);
  });

  it("refuses an icon larger than 64 KiB once decoded", async () => {
    const tenant = await seedTenant();
    const png = Uint8Array.from(atob(PNG_1X1), (char) => char.charCodeAt(0));
    const large = new Uint8Array(64 * 1024 + 1);
    large.set(png);
    let binary = "";
    for (const byte of large) binary += String.fromCharCode(byte);
    const problem = await expectFieldErrors(tenant, { icon: `data:image/png;base64,${btoa(binary)}` }, ["icon"]);
    expect(problem.errors!.icon![0]).toContain("65536 bytes");
  });
});

describe("official and private formulas", () => {
  it("a tenant lists the official formulas and its own private ones, never another tenant's", async () => {
    const [first, second] = [await seedTenant(), await seedTenant()];
    const mine = await createFormula(first, { name: "Mine" });
    const theirs = await createFormula(second, { name: "Theirs" });
    const reply = await call("GET", "/reactor-formulas?size=100", { key: first.managementKey });
    expect(reply.status).toBe(200);
    const ids = reply.body.data.map((formula: { id: string }) => formula.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);
    for (const official of OFFICIAL_FORMULAS) expect(ids).toContain(official.id);
    expect(reply.body.pagination.total_items).toBe(OFFICIAL_FORMULAS.length + 1);
  });

  it("official formulas come first, with type official", async () => {
    const tenant = await seedTenant();
    await createFormula(tenant);
    const reply = await call("GET", "/reactor-formulas", { key: tenant.managementKey });
    const types = reply.body.data.map((formula: { type: string }) => formula.type);
    expect(types).toEqual([...OFFICIAL_FORMULAS.map(() => "official"), "private"]);
  });

  it("the name filter matches case-insensitively with * as the only wildcard", async () => {
    const tenant = await seedTenant();
    await createFormula(tenant, { name: "Payout 100%" });
    await createFormula(tenant, { name: "Payout_v2" });
    const names = async (filter: string) =>
      (await call("GET", `/reactor-formulas?name=${encodeURIComponent(filter)}`, { key: tenant.managementKey })).body.data.map(
        (formula: { name: string }) => formula.name,
      );
    expect(await names("payout*")).toEqual(expect.arrayContaining(["Payout 100%", "Payout_v2"]));
    expect(await names("Payout 100%")).toEqual(["Payout 100%"]);
    expect(await names("Payout_v_")).toEqual([]);
    expect(await names("card brand*")).toEqual([officialFormula("Card brand and BIN details").name]);
  });

  it("lists are paginated with page and size", async () => {
    const tenant = await seedTenant();
    for (let i = 0; i < 3; i++) await createFormula(tenant, { name: `Paged ${i}` });
    const reply = await call("GET", "/reactor-formulas?name=Paged*&page=2&size=2", { key: tenant.managementKey });
    expect(reply.body.pagination).toEqual({ total_items: 3, page_number: 2, page_size: 2, total_pages: 2 });
    expect(reply.body.data).toHaveLength(1);
    expectProblem(await call("GET", "/reactor-formulas?size=101", { key: tenant.managementKey }), 400);
  });

  it("a tenant reads an official formula, code and contract included", async () => {
    const tenant = await seedTenant();
    const official = officialFormula("US bank account validation");
    const reply = await call("GET", `/reactor-formulas/${official.id}`, { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: official.id,
      type: "official",
      status: "verified",
      code: official.code,
      configuration: official.configuration,
      request_parameters: official.request_parameters,
      created_by: null,
    });
  });

  it("another tenant's private formula is 404 to read, replace or delete", async () => {
    const [owner, stranger] = [await seedTenant(), await seedTenant()];
    const formula = await createFormula(owner);
    expectProblem(await call("GET", `/reactor-formulas/${formula.id}`, { key: stranger.managementKey }), 404);
    expectProblem(await call("PUT", `/reactor-formulas/${formula.id}`, { key: stranger.managementKey, body: formulaBody() }), 404);
    expectProblem(await call("DELETE", `/reactor-formulas/${formula.id}`, { key: stranger.managementKey }), 404);
    expect((await call("GET", `/reactor-formulas/${formula.id}`, { key: owner.managementKey })).body.name).toBe("Echo");
  });

  it("creating an official formula is 403", async () => {
    const tenant = await seedTenant();
    expectProblem(await postFormula(tenant, { type: "official" }), 403);
  });

  it("replacing an official formula is 403, and it stays unchanged", async () => {
    const tenant = await seedTenant();
    const official = officialFormula("Card brand and BIN details");
    for (const type of ["official", "private"]) {
      expectProblem(await call("PUT", `/reactor-formulas/${official.id}`, { key: tenant.managementKey, body: formulaBody({ type }) }), 403);
    }
    expect((await call("GET", `/reactor-formulas/${official.id}`, { key: tenant.managementKey })).body.code).toBe(official.code);
  });

  it("deleting an official formula is 403, and it stays", async () => {
    const tenant = await seedTenant();
    const official = officialFormula("Card brand and BIN details");
    expectProblem(await call("DELETE", `/reactor-formulas/${official.id}`, { key: tenant.managementKey }), 403);
    expect((await call("GET", `/reactor-formulas/${official.id}`, { key: tenant.managementKey })).status).toBe(200);
  });

  it("a private formula cannot be turned into an official one (403)", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    expectProblem(
      await call("PUT", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey, body: formulaBody({ type: "official" }) }),
      403,
    );
  });

  it("a private formula is replaced whole by PUT and deleted with 204", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, { description: "old", configuration: [{ name: "a", type: "string" }] });
    const replaced = await call("PUT", `/reactor-formulas/${formula.id}`, {
      key: tenant.managementKey,
      body: formulaBody({ name: "New" }),
    });
    expect(replaced.body).toMatchObject({ name: "New", description: "Returns its args and configuration", configuration: [] });
    const deleted = await call("DELETE", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey });
    expect(deleted.status).toBe(204);
    expectProblem(await call("GET", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey }), 404);
  });
});

describe("reactor formula permissions", () => {
  it("each operation needs its reactor permission (403 naming it)", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    const readOnly = await createApplication(tenant, { type: "management", permissions: ["reactor:read"] });
    const cases: [string, string, unknown, string][] = [
      ["POST", "/reactor-formulas", formulaBody(), "reactor:create"],
      ["PUT", `/reactor-formulas/${formula.id}`, formulaBody(), "reactor:update"],
      ["DELETE", `/reactor-formulas/${formula.id}`, undefined, "reactor:delete"],
    ];
    for (const [method, path, body, permission] of cases) {
      const problem = expectProblem(await call(method, path, { key: readOnly.key, body }), 403);
      expect(problem.detail).toContain(permission);
    }
    expect((await call("GET", `/reactor-formulas/${formula.id}`, { key: readOnly.key })).status).toBe(200);
    const none = await createApplication(tenant, { type: "management", permissions: ["proxy:read"] });
    expect(expectProblem(await call("GET", "/reactor-formulas", { key: none.key }), 403).detail).toContain("reactor:read");
  });

  it("requests without a valid key are 401", async () => {
    expectProblem(await call("GET", "/reactor-formulas"), 401);
    expectProblem(await call("GET", "/reactor-formulas", { key: "key_unknown" }), 401);
  });
});

describe("changing a formula's contract", () => {
  it("a change that an existing reactor's configuration would not satisfy is 409 naming the reactor", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, { configuration: [{ name: "merchant", type: "string" }] });
    const reactor = await createReactor(tenant, formula.id, { name: "Shop A", configuration: { merchant: "m-1" } });
    const reply = await call("PUT", `/reactor-formulas/${formula.id}`, {
      key: tenant.managementKey,
      body: formulaBody({
        configuration: [
          { name: "merchant", type: "string" },
          { name: "api_key", type: "string" },
        ],
      }),
    });
    const problem = expectProblem(reply, 409);
    expect(problem.detail).toContain("Shop A");
    expect(problem.detail).toContain(reactor.id);
    expect(problem.detail).toContain("configuration.api_key");
    const unchanged = await call("GET", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey });
    expect(unchanged.body.configuration).toEqual([{ name: "merchant", type: "string", description: null }]);
  });

  it("a type change the configuration still satisfies losslessly is accepted", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, { configuration: [{ name: "limit", type: "string" }] });
    await createReactor(tenant, formula.id, { configuration: { limit: "250" } });
    const reply = await call("PUT", `/reactor-formulas/${formula.id}`, {
      key: tenant.managementKey,
      body: formulaBody({ configuration: [{ name: "limit", type: "number" }] }),
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  });

  it("removing a configuration element that reactors set is 409 (their value would be undeclared)", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant, { configuration: [{ name: "merchant", type: "string" }] });
    await createReactor(tenant, formula.id, { configuration: { merchant: "m-1" } });
    const problem = expectProblem(
      await call("PUT", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey, body: formulaBody({ configuration: [] }) }),
      409,
    );
    expect(problem.detail).toContain("configuration.merchant");
  });

  it("deleting a formula that reactors use is 409 naming them; once they are gone it is deleted", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    const reactor = await createReactor(tenant, formula.id, { name: "Still here" });
    const problem = expectProblem(await call("DELETE", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey }), 409);
    expect(problem.detail).toContain("Still here");
    expect((await call("DELETE", `/reactors/${reactor.id}`, { key: tenant.managementKey })).status).toBe(204);
    expect((await call("DELETE", `/reactor-formulas/${formula.id}`, { key: tenant.managementKey })).status).toBe(204);
  });
});
