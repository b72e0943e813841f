import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { callConfigured } from "../support/configured";
import { fakeCloudflare } from "../support/fake-cloudflare";
import { call, createApplication, dumpDatabase, expectProblem, rowCounts, seedTenant } from "../support/harness";
import { codeReactorRunning, createCodeReactor, createFormula, createReactor, ECHO_CODE, react, reactorRunning } from "../support/reactors";

/** Reactor code that answers which version of it ran. */
const versionCode = (version: number) => `module.exports = async function (req) { return { raw: { version: ${version} } }; };`;

describe("reactor code is never silently dropped", () => {
  it("PUT with code replaces what the reactor runs, and GET answers the code", async () => {
    const { tenant, reactor, caller } = await reactorRunning(ECHO_CODE);
    const put = await call("PUT", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "versioned", code: versionCode(2), configuration: {} },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.code).toBe(versionCode(2));
    const read = await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey });
    expect(read.body.code).toBe(versionCode(2));
    expect((await react(caller.key, reactor.id, {})).body.raw).toEqual({ version: 2 });
  });

  it("PATCH with code replaces what the reactor runs", async () => {
    const { tenant, reactor, caller } = await reactorRunning(ECHO_CODE);
    const patch = await call("PATCH", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { code: versionCode(3) },
      contentType: "application/merge-patch+json",
    });
    expect(patch.status, JSON.stringify(patch.body)).toBe(204);
    const read = await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey });
    expect(read.body.code).toBe(versionCode(3));
    expect((await react(caller.key, reactor.id, {})).body.raw).toEqual({ version: 3 });
  });

  it("a member the reactor would not keep is a 400 naming it (POST, PUT, PATCH, a reference, react), and nothing changes", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    const reactor = await createReactor(tenant, formula.id, { name: "kept" });
    const created = await call("POST", "/reactors", {
      key: tenant.managementKey,
      body: { name: "new", formula: { id: formula.id }, colour: "red" },
    });
    expect(expectProblem(created, 400).errors).toEqual({ body: ["unknown field: colour"] });
    const put = await call("PUT", `/reactors/${reactor.id}`, { key: tenant.managementKey, body: { name: "renamed", colour: "red" } });
    expect(expectProblem(put, 400).errors).toEqual({ body: ["unknown field: colour"] });
    const patch = await call("PATCH", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "renamed", callback_url: "https://example.com/" },
      contentType: "application/merge-patch+json",
    });
    expect(expectProblem(patch, 400).errors).toEqual({ body: ["unknown field: callback_url"] });
    const reference = await call("PUT", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "renamed", formula: { id: formula.id, name: "Echo" } },
    });
    expect(expectProblem(reference, 400).errors).toEqual({ formula: ["unknown field: name (only the formula's id is sent)"] });
    const reacted = await call("POST", `/reactors/${reactor.id}/react`, {
      key: (await createApplication(tenant, { type: "private", permissions: ["token:use"] })).key,
      body: { args: {}, callback_url: "https://example.com/" },
    });
    expect(expectProblem(reacted, 400).errors).toEqual({ body: ["unknown field: callback_url"] });
    const read = await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey });
    expect(read.body.name).toBe("kept");
    expect((await call("GET", "/reactors", { key: tenant.managementKey })).body.data).toHaveLength(1);
  });
});

describe("reactors with their own code", () => {
  it("POST with code creates a reactor that answers its code and runtime, and runs it with its configuration", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(ECHO_CODE, { configuration: { SERVICE_API_KEY: "key_abcd1234" } });
    expect(reactor).toMatchObject({
      tenant_id: tenant.tenantId,
      name: "coded",
      formula: null,
      code: ECHO_CODE,
      runtime: { image: "node-bt" },
      configuration: { SERVICE_API_KEY: "key_abcd1234" },
      application: null,
      created_by: tenant.managementApplicationId,
    });
    expect((await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey })).body).toEqual(reactor);
    expect((await call("GET", "/reactors", { key: tenant.managementKey })).body.data).toEqual([reactor]);
    const reply = await react(caller.key, reactor.id, { customer_id: "c-1" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({ tokens: null, raw: { args: { customer_id: "c-1" }, configuration: { SERVICE_API_KEY: "key_abcd1234" } } });
  });

  it("runtime may only name the sandbox's node-bt: other images and settings are refused, not dropped", async () => {
    const tenant = await seedTenant();
    const post = (runtime: unknown) =>
      call("POST", "/reactors", { key: tenant.managementKey, body: { name: "r", code: ECHO_CODE, runtime } });
    expect((await post({ image: "node-bt" })).status).toBe(201);
    expect(Object.keys(expectProblem(await post({ image: "node22" }), 400).errors!)).toEqual(["runtime.image"]);
    const settings = expectProblem(await post({ image: "node-bt", dependencies: { "js-sha256": "0.11.1" }, timeout: 30 }), 400);
    expect(settings.errors!.runtime![0]).toContain("not supported: dependencies, timeout");
    const formula = await createFormula(tenant);
    const withFormula = await call("POST", "/reactors", {
      key: tenant.managementKey,
      body: { name: "r", formula: { id: formula.id }, runtime: { image: "node-bt" } },
    });
    expect(Object.keys(expectProblem(withFormula, 400).errors!)).toEqual(["runtime"]);
    expect((await call("GET", "/reactors", { key: tenant.managementKey })).body.data).toHaveLength(1);
  });

  it("a reactor runs exactly one of a formula and its own code", async () => {
    const tenant = await seedTenant();
    const formula = await createFormula(tenant);
    const both = await call("POST", "/reactors", {
      key: tenant.managementKey,
      body: { name: "r", formula: { id: formula.id }, code: ECHO_CODE },
    });
    expect(Object.keys(expectProblem(both, 400).errors!)).toEqual(["code"]);
    const neither = await call("POST", "/reactors", { key: tenant.managementKey, body: { name: "r" } });
    expect(Object.keys(expectProblem(neither, 400).errors!).sort()).toEqual(["code", "formula"]);
    const reactor = await createCodeReactor(tenant, ECHO_CODE);
    const patch = await call("PATCH", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { formula: { id: formula.id }, code: ECHO_CODE },
      contentType: "application/merge-patch+json",
    });
    expect(Object.keys(expectProblem(patch, 400).errors!)).toEqual(["code"]);
  });

  it("code is checked by the sandbox when saved: too long, unparsable or without an export is a 400 naming code, and nothing is stored", async () => {
    const tenant = await seedTenant();
    const before = await rowCounts();
    const oversize = `module.exports = async () => ({ raw: "${"x".repeat(50_000)}" });`;
    const cases: [string, RegExp][] = [
      [oversize, /must be at most 50000 characters/],
      ["module.exports = async function (req) { return {", /line 1, column \d+: syntax error/],
      ["const x = 1;", /must export a function/],
      [
        'module.exports = async () => ({ raw: await import("cloudflare:workers") });',
        /line 1, column \d+: dynamic import\(\) is not supported/,
      ],
    ];
    for (const [code, message] of cases) {
      const reply = await call("POST", "/reactors", { key: tenant.managementKey, body: { name: "r", code } });
      const problem = expectProblem(reply, 400);
      expect(Object.keys(problem.errors!)).toEqual(["code"]);
      expect(problem.errors!.code![0]).toMatch(message);
    }
    const reactor = await createCodeReactor(tenant, ECHO_CODE);
    const put = await call("PUT", `/reactors/${reactor.id}`, { key: tenant.managementKey, body: { name: "r", code: oversize } });
    expect(Object.keys(expectProblem(put, 400).errors!)).toEqual(["code"]);
    expect((await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey })).body.code).toBe(ECHO_CODE);
    const after = await rowCounts();
    expect(after["DB.reactors"]).toBe(before["DB.reactors"]! + 1);
  });

  it("a reactor's own configuration is an object of at most 100 strings of at most 10,000 characters, stored encrypted", async () => {
    const tenant = await seedTenant();
    const post = (configuration: unknown) =>
      call("POST", "/reactors", { key: tenant.managementKey, body: { name: "r", code: ECHO_CODE, configuration } });
    expect(Object.keys(expectProblem(await post({ LIMIT: 250, LIVE: true }), 400).errors!).sort()).toEqual([
      "configuration.LIMIT",
      "configuration.LIVE",
    ]);
    expect(Object.keys(expectProblem(await post({ KEY: "x".repeat(10_001) }), 400).errors!)).toEqual(["configuration.KEY"]);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`K${i}`, "v"]));
    expect(Object.keys(expectProblem(await post(many), 400).errors!)).toEqual(["configuration"]);
    const secret = `sk_live_${crypto.randomUUID()}`;
    expect((await post({ SECRET: secret })).status).toBe(201);
    expect(await dumpDatabase()).not.toContain(secret);
  });

  it("PUT and PATCH move a reactor between its own code and a formula; without either it keeps what it runs", async () => {
    const { tenant, reactor, caller } = await codeReactorRunning(versionCode(1));
    const formula = await createFormula(tenant, { code: versionCode(7) });
    const renamed = await call("PUT", `/reactors/${reactor.id}`, { key: tenant.managementKey, body: { name: "renamed" } });
    expect(renamed.body).toMatchObject({ name: "renamed", code: versionCode(1), formula: null });
    const toFormula = await call("PUT", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { name: "renamed", formula: { id: formula.id } },
    });
    expect(toFormula.body).toMatchObject({ code: null, runtime: null, formula: { id: formula.id } });
    expect((await react(caller.key, reactor.id, {})).body.raw).toEqual({ version: 7 });
    const toCode = await call("PATCH", `/reactors/${reactor.id}`, {
      key: tenant.managementKey,
      body: { code: versionCode(8), runtime: { image: "node-bt" } },
      contentType: "application/merge-patch+json",
    });
    expect(toCode.status, JSON.stringify(toCode.body)).toBe(204);
    expect((await call("GET", `/reactors/${reactor.id}`, { key: tenant.managementKey })).body).toMatchObject({
      formula: null,
      code: versionCode(8),
      runtime: { image: "node-bt" },
    });
    expect((await react(caller.key, reactor.id, {})).body.raw).toEqual({ version: 8 });
  });

  it("another tenant's reactor with code is a 404, and reading and changing one needs the reactor permissions", async () => {
    const { reactor } = await codeReactorRunning(ECHO_CODE);
    const stranger = await seedTenant();
    expectProblem(await call("GET", `/reactors/${reactor.id}`, { key: stranger.managementKey }), 404);
    expectProblem(await call("PUT", `/reactors/${reactor.id}`, { key: stranger.managementKey, body: { name: "x", code: ECHO_CODE } }), 404);
    const reader = await createApplication(stranger, { type: "management", permissions: ["reactor:read"] });
    expectProblem(await call("POST", "/reactors", { key: reader.key, body: { name: "x", code: ECHO_CODE } }), 403);
  });
});

describe("a reactor's own code has no ambient network or secrets", () => {
  it("process.env, the global scope and the bindings hold nothing of the vault's", async () => {
    const code = `module.exports = async () => ({ raw: {
      processEnv: process.env,
      bindings: [typeof DB, typeof LOADER, typeof VAULT_MASTER_KEYS, typeof env, typeof REACTOR_QUEUE],
      globals: Object.getOwnPropertyNames(globalThis),
    } });`;
    const { reactor, caller } = await codeReactorRunning(code);
    const reply = await react(caller.key, reactor.id, {});
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const everything = JSON.stringify(reply.body);
    for (const entry of env.VAULT_MASTER_KEYS.split(",")) expect(everything).not.toContain(entry.split(":")[1]);
    expect(everything).not.toContain(env.OPERATOR_API_KEY);
    expect(everything).not.toContain(env.BOOTSTRAP_API_KEY);
    expect(reply.body.raw.processEnv).toEqual({});
    expect(reply.body.raw.bindings).toEqual(["undefined", "undefined", "undefined", "undefined", "undefined"]);
  });

  it("fetch to a private or metadata address is refused by the egress policy", async () => {
    const code = `module.exports = async (req) => {
      const answers = {};
      for (const url of req.args.urls) {
        try { answers[url] = (await fetch(url)).status; } catch (error) { answers[url] = String(error.message); }
      }
      return { raw: answers };
    };`;
    const { reactor, caller } = await codeReactorRunning(code);
    const urls = ["http://169.254.169.254/latest/meta-data/", "https://10.0.0.1/", "https://metadata.google.internal/", "http://vault/"];
    const reply = await react(caller.key, reactor.id, { urls });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    for (const url of urls) expect(reply.body.raw[url], url).toContain("The destination is not allowed");
  });
});

describe("a reactor's own code under Workers for Platforms", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("is uploaded to the namespace when saved and runs there; deleting the reactor leaves the script to the cron", async () => {
    const cloudflare = fakeCloudflare();
    const tenant = await seedTenant();
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const created = await callConfigured(cloudflare.env, "POST", "/reactors", {
      headers: { "SVC-API-KEY": tenant.managementKey },
      body: { name: "dispatched", code: versionCode(1) },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(cloudflare.calls.map((apiCall) => apiCall.method)).toEqual(["PUT"]);
    expect(cloudflare.calls[0]!.parts.at(-1)!.text).toContain("version: 1");
    const reacted = await callConfigured(cloudflare.env, "POST", `/reactors/${created.body.id}/react`, {
      headers: { "SVC-API-KEY": caller.key },
      body: { args: {} },
    });
    expect(reacted.body).toEqual({ tokens: null, raw: { version: 1 } });
    const deleted = await callConfigured(cloudflare.env, "DELETE", `/reactors/${created.body.id}`, {
      headers: { "SVC-API-KEY": tenant.managementKey },
    });
    expect(deleted.status).toBe(204);
    expect(cloudflare.calls.map(({ method }) => method)).toEqual(["PUT"]);
  });
});
