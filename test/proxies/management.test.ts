import { describe, expect, it } from "vitest";
import { call, createApplication, dumpDatabase, expectProblem, rowCounts, seedTenant } from "../support/harness";
import { createProxy, loopback } from "../support/proxies";

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
const ECHO_TRANSFORM = "module.exports = async function (req) { return { body: req.args.body, headers: req.args.headers }; };";

describe("proxies: create", () => {
  it("creates a proxy with the defaults of the specification", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      body: { name: "Partner", destination_url: loopback("/api") },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      tenant_id: tenant.tenantId,
      name: "Partner",
      key: expect.any(String),
      destination_url: loopback("/api"),
      request_transform: null,
      response_transform: null,
      application_id: null,
      configuration: null,
      require_auth: true,
      created_by: tenant.managementApplicationId,
      created_at: expect.stringMatching(/Z$/),
      modified_by: null,
      modified_at: null,
    });
  });

  it("generates a high-entropy key that reads return", async () => {
    const tenant = await seedTenant();
    const first = await createProxy(tenant);
    const second = await createProxy(tenant);
    expect(first.key).toMatch(/^proxy_[A-Za-z0-9_-]{43}$/);
    expect(second.key).not.toBe(first.key);
    const read = await call("GET", `/proxies/${first.id}`, { key: tenant.managementKey });
    expect(read.body.key).toBe(first.key);
  });

  it("returns every optional field as given", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const proxy = await createProxy(tenant, {
      request_transform: { code: ECHO_TRANSFORM },
      response_transform: { code: ECHO_TRANSFORM },
      application: { id: application.id },
      configuration: { PARTNER_SECRET: "s3cret", region: "eu" },
      require_auth: false,
    });
    expect(proxy).toMatchObject({
      request_transform: { code: ECHO_TRANSFORM },
      response_transform: { code: ECHO_TRANSFORM },
      application_id: application.id,
      configuration: { PARTNER_SECRET: "s3cret", region: "eu" },
      require_auth: false,
    });
  });

  it("accepts a public application", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const proxy = await createProxy(tenant, { application: { id: application.id } });
    expect(proxy.application_id).toBe(application.id);
  });

  it("stores neither the key nor the configuration in plaintext", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { configuration: { secret: "configuration-secret-4f9a1c" } });
    const dump = await dumpDatabase();
    expect(dump).not.toContain(proxy.key);
    expect(dump).not.toContain(proxy.key.slice(6));
    expect(dump).not.toContain("configuration-secret-4f9a1c");
  });

  it.each([
    ["name missing", { destination_url: "https://example.com" }, "name"],
    ["name empty", { name: "  ", destination_url: "https://example.com" }, "name"],
    ["name over 200 characters", { name: "x".repeat(201), destination_url: "https://example.com" }, "name"],
    ["name not a string", { name: 7, destination_url: "https://example.com" }, "name"],
    ["destination_url missing", { name: "a" }, "destination_url"],
    ["destination_url not a URL", { name: "a", destination_url: "partner" }, "destination_url"],
    ["destination_url relative", { name: "a", destination_url: "/api/charge" }, "destination_url"],
    ["destination_url of another scheme", { name: "a", destination_url: "ftp://example.com/file" }, "destination_url"],
    ["destination_url over 400 characters", { name: "a", destination_url: `https://example.com/${"a".repeat(400)}` }, "destination_url"],
    ["destination_url over plain HTTP", { name: "a", destination_url: "http://example.com/" }, "destination_url"],
    ["destination_url in a private range", { name: "a", destination_url: "https://10.0.0.1/" }, "destination_url"],
    ["destination_url at the metadata address", { name: "a", destination_url: "https://169.254.169.254/latest" }, "destination_url"],
    ["destination_url with credentials", { name: "a", destination_url: "https://user:pw@example.com/" }, "destination_url"],
    [
      "request_transform without code",
      { name: "a", destination_url: "https://example.com", request_transform: {} },
      "request_transform.code",
    ],
    [
      "response_transform with empty code",
      { name: "a", destination_url: "https://example.com", response_transform: { code: "" } },
      "response_transform.code",
    ],
    ["application without id", { name: "a", destination_url: "https://example.com", application: {} }, "application.id"],
    ["application id not a UUID", { name: "a", destination_url: "https://example.com", application: { id: "app" } }, "application.id"],
    ["application unknown", { name: "a", destination_url: "https://example.com", application: { id: UNKNOWN_ID } }, "application.id"],
    ["configuration not an object", { name: "a", destination_url: "https://example.com", configuration: ["a"] }, "configuration"],
    [
      "configuration value not a string",
      { name: "a", destination_url: "https://example.com", configuration: { port: 443 } },
      "configuration.port",
    ],
    [
      "configuration with over 100 entries",
      {
        name: "a",
        destination_url: "https://example.com",
        configuration: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, "v"])),
      },
      "configuration",
    ],
    ["require_auth not a boolean", { name: "a", destination_url: "https://example.com", require_auth: "yes" }, "require_auth"],
  ])("refuses %s with 400 naming the field", async (_case, body, field) => {
    const tenant = await seedTenant();
    const before = await rowCounts();
    const reply = await call("POST", "/proxies", { key: tenant.managementKey, body });
    const problem = expectProblem(reply, 400);
    expect(Object.keys(problem.errors ?? {})).toContain(field);
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses a management application with 400", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      body: { name: "a", destination_url: "https://example.com", application: { id: tenant.managementApplicationId } },
    });
    expect(expectProblem(reply, 400).errors).toHaveProperty(["application.id"]);
  });

  it("refuses another tenant's application with 400", async () => {
    const tenant = await seedTenant();
    const other = await seedTenant();
    const foreign = await createApplication(other, { type: "private", permissions: ["token:use"] });
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      body: { name: "a", destination_url: "https://example.com", application: { id: foreign.id } },
    });
    expect(expectProblem(reply, 400).errors).toHaveProperty(["application.id"]);
  });

  it("refuses a body that is not JSON with 400", async () => {
    const tenant = await seedTenant();
    expectProblem(await call("POST", "/proxies", { key: tenant.managementKey, raw: "{name" }), 400);
  });

  it("refuses another content type with 415", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      raw: "name=a",
      contentType: "application/x-www-form-urlencoded",
    });
    expectProblem(reply, 415);
  });

  it("needs an API key", async () => {
    expectProblem(await call("POST", "/proxies", { body: { name: "a", destination_url: "https://example.com" } }), 401);
  });

  it("needs proxy:create", async () => {
    const tenant = await seedTenant();
    const reader = await createApplication(tenant, { type: "management", permissions: ["proxy:read"] });
    const reply = await call("POST", "/proxies", { key: reader.key, body: { name: "a", destination_url: "https://example.com" } });
    expect(expectProblem(reply, 403).detail).toContain("proxy:create");
  });

  it("replays the first response for the same idempotency key and body", async () => {
    const tenant = await seedTenant();
    const send = () =>
      call("POST", "/proxies", {
        key: tenant.managementKey,
        body: { name: "once", destination_url: "https://example.com" },
        headers: { "SVC-IDEMPOTENCY-KEY": "create-once" },
      });
    const first = await send();
    const second = await send();
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    const list = await call("GET", "/proxies", { key: tenant.managementKey });
    expect(list.body.pagination.total_items).toBe(1);
  });

  it("refuses the same idempotency key with another body with 409", async () => {
    const tenant = await seedTenant();
    const headers = { "SVC-IDEMPOTENCY-KEY": "create-twice" };
    await call("POST", "/proxies", { key: tenant.managementKey, body: { name: "a", destination_url: "https://example.com" }, headers });
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      body: { name: "b", destination_url: "https://example.com" },
      headers,
    });
    expectProblem(reply, 409);
  });
});

describe("proxies: list", () => {
  it("lists the tenant's proxies, newest first, paginated", async () => {
    const tenant = await seedTenant();
    const created = [];
    for (const name of ["one", "two", "three"]) created.push(await createProxy(tenant, { name }));
    const first = await call("GET", "/proxies?size=2", { key: tenant.managementKey });
    expect(first.status).toBe(200);
    expect(first.body.pagination).toEqual({ total_items: 3, page_number: 1, page_size: 2, total_pages: 2 });
    expect(first.body.data.map((proxy: { name: string }) => proxy.name)).toEqual(["three", "two"]);
    const second = await call("GET", "/proxies?size=2&page=2", { key: tenant.managementKey });
    expect(second.body.data.map((proxy: { name: string }) => proxy.name)).toEqual(["one"]);
    expect(second.body.data[0].key).toBe(created[0]!.key);
  });

  it("filters by repeated id", async () => {
    const tenant = await seedTenant();
    const [a, , c] = [await createProxy(tenant), await createProxy(tenant), await createProxy(tenant)];
    const reply = await call("GET", `/proxies?id=${a.id}&id=${c!.id}`, { key: tenant.managementKey });
    expect(reply.body.data.map((proxy: { id: string }) => proxy.id).sort()).toEqual([a.id, c!.id].sort());
  });

  it("filters by name with * as the only wildcard, ignoring case", async () => {
    const tenant = await seedTenant();
    await createProxy(tenant, { name: "Stripe charges" });
    await createProxy(tenant, { name: "Stripe refunds" });
    await createProxy(tenant, { name: "Adyen_payments" });
    const names = async (filter: string) =>
      (await call("GET", `/proxies?name=${encodeURIComponent(filter)}`, { key: tenant.managementKey })).body.data
        .map((proxy: { name: string }) => proxy.name)
        .sort();
    expect(await names("stripe*")).toEqual(["Stripe charges", "Stripe refunds"]);
    expect(await names("*refunds")).toEqual(["Stripe refunds"]);
    expect(await names("stripe charges")).toEqual(["Stripe charges"]);
    expect(await names("Adyen%payments")).toEqual([]);
    expect(await names("Adyen_payments")).toEqual(["Adyen_payments"]);
  });

  it("never shows another tenant's proxies", async () => {
    const tenant = await seedTenant();
    const other = await seedTenant();
    const foreign = await createProxy(other);
    const reply = await call("GET", `/proxies?id=${foreign.id}`, { key: tenant.managementKey });
    expect(reply.body.data).toEqual([]);
    expect((await call("GET", "/proxies", { key: tenant.managementKey })).body.pagination.total_items).toBe(0);
  });

  it.each([
    ["page 0", "page=0", "page"],
    ["size over 100", "size=101", "size"],
    ["size not a number", "size=ten", "size"],
    ["an id that is not a UUID", "id=abc", "id[0]"],
  ])("refuses %s with 400", async (_case, query, field) => {
    const tenant = await seedTenant();
    const problem = expectProblem(await call("GET", `/proxies?${query}`, { key: tenant.managementKey }), 400);
    expect(Object.keys(problem.errors ?? {})).toContain(field);
  });

  it("needs proxy:read", async () => {
    const tenant = await seedTenant();
    const creator = await createApplication(tenant, { type: "management", permissions: ["proxy:create"] });
    expectProblem(await call("GET", "/proxies", { key: creator.key }), 403);
  });
});

describe("proxies: get", () => {
  it("returns the proxy", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { configuration: { a: "1" } });
    const reply = await call("GET", `/proxies/${proxy.id}`, { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(proxy);
  });

  it("answers 404 for another tenant's proxy", async () => {
    const tenant = await seedTenant();
    const foreign = await createProxy(await seedTenant());
    expectProblem(await call("GET", `/proxies/${foreign.id}`, { key: tenant.managementKey }), 404);
  });

  it("answers 404 for an unknown id and 400 for a malformed one", async () => {
    const tenant = await seedTenant();
    expectProblem(await call("GET", `/proxies/${UNKNOWN_ID}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("GET", "/proxies/not-a-uuid", { key: tenant.managementKey }), 400);
  });
});

describe("proxies: update", () => {
  it("replaces every field and keeps the key", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const proxy = await createProxy(tenant, {
      configuration: { a: "1" },
      application: { id: application.id },
      require_auth: false,
    });
    const reply = await call("PUT", `/proxies/${proxy.id}`, {
      key: tenant.managementKey,
      body: { name: "renamed", destination_url: loopback("/v2") },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      id: proxy.id,
      key: proxy.key,
      name: "renamed",
      destination_url: loopback("/v2"),
      configuration: null,
      application_id: null,
      require_auth: true,
      created_at: proxy.created_at,
      modified_by: tenant.managementApplicationId,
      modified_at: expect.stringMatching(/Z$/),
    });
  });

  it("requires name and destination_url", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const problem = expectProblem(await call("PUT", `/proxies/${proxy.id}`, { key: tenant.managementKey, body: {} }), 400);
    expect(Object.keys(problem.errors ?? {}).sort()).toEqual(["destination_url", "name"]);
  });

  it("checks the destination against the egress policy", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const reply = await call("PUT", `/proxies/${proxy.id}`, {
      key: tenant.managementKey,
      body: { name: "a", destination_url: "https://192.168.1.1/" },
    });
    expect(expectProblem(reply, 400).errors).toHaveProperty(["destination_url"]);
  });

  it("answers 404 for another tenant's proxy and leaves it unchanged", async () => {
    const tenant = await seedTenant();
    const other = await seedTenant();
    const foreign = await createProxy(other);
    const reply = await call("PUT", `/proxies/${foreign.id}`, {
      key: tenant.managementKey,
      body: { name: "hijacked", destination_url: "https://example.com" },
    });
    expectProblem(reply, 404);
    expect((await call("GET", `/proxies/${foreign.id}`, { key: other.managementKey })).body.name).toBe("echo");
  });

  it("needs proxy:update", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const reader = await createApplication(tenant, { type: "management", permissions: ["proxy:read"] });
    const reply = await call("PUT", `/proxies/${proxy.id}`, {
      key: reader.key,
      body: { name: "a", destination_url: "https://example.com" },
    });
    expectProblem(reply, 403);
  });
});

describe("proxies: patch", () => {
  const patch = (key: string, id: string, body: unknown) =>
    call("PATCH", `/proxies/${id}`, { key, body, contentType: "application/merge-patch+json" });
  /** Patches (204, no body, as the original interface answers) and reads the proxy back. */
  const patched = async (key: string, id: string, body: unknown) => {
    const reply = await patch(key, id, body);
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
    expect(reply.body).toBeNull();
    return (await call("GET", `/proxies/${id}`, { key })).body;
  };

  it("answers 204 with no body, as the original interface does", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const reply = await patch(tenant.managementKey, proxy.id, { name: "patched" });
    expect(reply.status).toBe(204);
    expect(reply.body).toBeNull();
    expect(reply.headers.get("content-type")).toBeNull();
  });

  it("changes only the members given", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { configuration: { a: "1" }, require_auth: false });
    expect(await patched(tenant.managementKey, proxy.id, { name: "patched" })).toMatchObject({
      name: "patched",
      key: proxy.key,
      destination_url: proxy.destination_url,
      configuration: { a: "1" },
      require_auth: false,
      modified_by: tenant.managementApplicationId,
    });
  });

  it("merges configuration entry by entry; null removes an entry", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { configuration: { keep: "1", change: "2", drop: "3" } });
    const reply = await patched(tenant.managementKey, proxy.id, { configuration: { change: "two", drop: null, add: "4" } });
    expect(reply.configuration).toEqual({ keep: "1", change: "two", add: "4" });
  });

  it("removes optional members set to null", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const proxy = await createProxy(tenant, {
      request_transform: { code: ECHO_TRANSFORM },
      application: { id: application.id },
      configuration: { a: "1" },
    });
    const reply = await patched(tenant.managementKey, proxy.id, { request_transform: null, application: null, configuration: null });
    expect(reply).toMatchObject({ request_transform: null, application_id: null, configuration: null });
  });

  it.each([
    ["name set to null", { name: null }, "name"],
    ["destination_url set to null", { destination_url: null }, "destination_url"],
    ["destination_url refused by the egress policy", { destination_url: "https://printer.local/" }, "destination_url"],
    ["require_auth set to null", { require_auth: null }, "require_auth"],
    ["a configuration value that is not a string", { configuration: { a: 1 } }, "configuration.a"],
  ])("refuses %s with 400", async (_case, body, field) => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const problem = expectProblem(await patch(tenant.managementKey, proxy.id, body), 400);
    expect(Object.keys(problem.errors ?? {})).toContain(field);
  });

  it("keeps configuration entries named like Object internals as data", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { configuration: { toString: "t" } });
    const merged = await patched(tenant.managementKey, proxy.id, { configuration: { constructor: "c", hasOwnProperty: "h" } });
    expect(Object.entries(merged.configuration)).toEqual([
      ["toString", "t"],
      ["constructor", "c"],
      ["hasOwnProperty", "h"],
    ]);
  });

  it("refuses a merge that leaves over 100 configuration entries", async () => {
    const tenant = await seedTenant();
    const full = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, "v"]));
    const proxy = await createProxy(tenant, { configuration: full });
    const problem = expectProblem(await patch(tenant.managementKey, proxy.id, { configuration: { one_more: "v" } }), 400);
    expect(problem.errors).toHaveProperty(["configuration"]);
  });

  it("needs a key (401) and proxy:update (403 naming it), changing nothing", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const reader = await createApplication(tenant, { type: "management", permissions: ["proxy:read"] });
    expectProblem(await call("PATCH", `/proxies/${proxy.id}`, { body: { name: "x" }, contentType: "application/merge-patch+json" }), 401);
    expect(expectProblem(await patch(reader.key, proxy.id, { name: "x" }), 403).detail).toContain("proxy:update");
    expect((await call("GET", `/proxies/${proxy.id}`, { key: tenant.managementKey })).body.name).toBe(proxy.name);
  });

  it("needs the merge-patch media type", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    expectProblem(await call("PATCH", `/proxies/${proxy.id}`, { key: tenant.managementKey, body: { name: "x" } }), 415);
  });

  it("answers 404 for another tenant's proxy", async () => {
    const tenant = await seedTenant();
    const foreign = await createProxy(await seedTenant());
    expectProblem(await patch(tenant.managementKey, foreign.id, { name: "x" }), 404);
  });
});

describe("proxies: delete", () => {
  it("deletes the proxy", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const reply = await call("DELETE", `/proxies/${proxy.id}`, { key: tenant.managementKey });
    expect(reply.status).toBe(204);
    expectProblem(await call("GET", `/proxies/${proxy.id}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("DELETE", `/proxies/${proxy.id}`, { key: tenant.managementKey }), 404);
  });

  it("answers 404 for another tenant's proxy and leaves it in place", async () => {
    const tenant = await seedTenant();
    const other = await seedTenant();
    const foreign = await createProxy(other);
    expectProblem(await call("DELETE", `/proxies/${foreign.id}`, { key: tenant.managementKey }), 404);
    expect((await call("GET", `/proxies/${foreign.id}`, { key: other.managementKey })).status).toBe(200);
  });

  it("needs proxy:delete", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    const reader = await createApplication(tenant, { type: "management", permissions: ["proxy:read"] });
    expectProblem(await call("DELETE", `/proxies/${proxy.id}`, { key: reader.key }), 403);
  });
});

describe("proxies: OpenAPI", () => {
  it("documents management and invocation in the OpenAPI document", async () => {
    const reply = await call("GET", "/openapi.json");
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body.paths["/proxies"]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(reply.body.paths["/proxies/{id}"]).sort()).toEqual(["delete", "get", "patch", "put"]);
    expect(Object.keys(reply.body.paths["/proxy/{path}"]).sort()).toEqual(["delete", "get", "patch", "post", "put"]);
    expect(reply.body.components.schemas.Proxy.properties).toHaveProperty("key");
  });
});
