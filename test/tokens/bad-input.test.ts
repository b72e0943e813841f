import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { seedTokenTenant, VISA } from "../support/tokens";

/** Invalid create bodies, each with the field the 400 must name. */
const INVALID_CREATES: [string, unknown, string][] = [
  ["an array body", [{ type: "token", data: "x" }], "body"],
  ["null as the body", null, "body"],
  ["a string body", "token", "body"],
  ["an unknown field", { type: "token", data: "x", search_index: ["{{ data }}"] }, "body"],
  ["a non-string type", { type: 7, data: "x" }, "type"],
  ["a missing type", { data: "x" }, "type"],
  ["metadata that is not an object", { type: "token", data: "x", metadata: "a=b" }, "metadata"],
  ["a metadata value that is not a string", { type: "token", data: "x", metadata: { a: 1 } }, "metadata.a"],
  [
    "more than 100 metadata entries",
    { type: "token", data: "x", metadata: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, "v"])) },
    "metadata",
  ],
  ["a container without slashes", { type: "token", data: "x", containers: ["pci"] }, "containers[0]"],
  ["a container with a bad character", { type: "token", data: "x", containers: ["/p ci/"] }, "containers[0]"],
  ["an empty container list", { type: "token", data: "x", containers: [] }, "containers"],
  ["containers that are not a list", { type: "token", data: "x", containers: "/pci/" }, "containers"],
  ["more than 20 containers", { type: "token", data: "x", containers: Array.from({ length: 21 }, (_, i) => `/c${i}/`) }, "containers"],
  ["a non-string expression", { type: "token", data: "x", mask: 4 }, "mask"],
  ["an empty expression", { type: "token", data: "x", fingerprint_expression: "" }, "fingerprint_expression"],
  ["a non-boolean deduplicate_token", { type: "token", data: "x", deduplicate_token: "yes" }, "deduplicate_token"],
  ["a non-string expires_at", { type: "token", data: "x", expires_at: 4102444800000 }, "expires_at"],
];

describe("bad input", () => {
  for (const [what, body, field] of INVALID_CREATES) {
    it(`${what} is a 400 naming ${field}, and nothing is stored`, async () => {
      const { key } = await seedTokenTenant();
      const before = await rowCounts();
      const problem = expectProblem(await call("POST", "/tokens", { key, body }), 400);
      expect(problem.errors, JSON.stringify(problem)).toHaveProperty([field]);
      expect(problem.errors![field]![0]).toMatch(/\w+/);
      expect(await rowCounts()).toEqual(before);
    });
  }

  it("malformed JSON is a 400", async () => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    expectProblem(await call("POST", "/tokens", { key, raw: '{"type": "token", "data": ' }), 400);
    expectProblem(await call("POST", "/tokenize", { key, raw: "[1, 2" }), 400);
    expect(await rowCounts()).toEqual(before);
  });

  it("a request without a body is a 400", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await call("POST", "/tokenize", { key }), 400).errors?.body).toEqual(["is required"]);
    expect(expectProblem(await call("POST", "/tokens", { key }), 400).errors).toHaveProperty(["data"]);
  });

  it("a body in another media type is a 415", async () => {
    const { key } = await seedTokenTenant();
    const body = JSON.stringify({ type: "token", data: "x" });
    expectProblem(await call("POST", "/tokens", { key, raw: body, contentType: "text/plain" }), 415);
    expectProblem(await call("POST", "/tokenize", { key, raw: body, contentType: "application/x-www-form-urlencoded" }), 415);
  });

  it("a body over 1 MiB is a 413", async () => {
    const { key } = await seedTokenTenant();
    expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: "x".repeat(1024 * 1024) } }), 413);
  });

  it("a tokenize of nearly 1 MiB, which seals into more than one D1 value holds, stores every token", async () => {
    const { key } = await seedTokenTenant();
    const values = Array.from({ length: 59 }, (_, i) => `${i}-${"x".repeat(14_000)}`);
    const indexes = Array.from({ length: 20 }, (_, k) => `{{ data }}${"x".repeat(k)}`);
    const body = values.map((data) => ({ type: "token", data, search_indexes: indexes, mask: "{{ data }}" }));
    const reply = await call("POST", "/tokenize", { key, body });
    expect(reply.status, reply.text.slice(0, 300)).toBe(201);
    const read = await call("GET", `/tokens/${reply.body[58].id}`, { key });
    expect(read.body.data).toBe(values[58]);
  });

  it("a missing or unknown API key is a 401", async () => {
    expectProblem(await call("POST", "/tokens", { body: { type: "token", data: "x" } }), 401);
    expectProblem(await call("GET", `/tokens/${crypto.randomUUID()}`, { key: "key_unknown" }), 401);
  });

  it("each route needs its permission (403 naming it)", async () => {
    const tenant = await seedTokenTenant();
    const nothing = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const id = crypto.randomUUID();
    for (const [method, path, permission, body] of [
      ["POST", "/tokens", "token:create", { type: "token", data: "x" }],
      ["POST", "/tokenize", "token:create", { a: "x" }],
      ["GET", `/tokens/${id}`, "token:read", undefined],
      ["DELETE", `/tokens/${id}`, "token:delete", undefined],
    ] as const) {
      expect(expectProblem(await call(method, path, { key: nothing.key, body }), 403).detail).toContain(permission);
    }
  });

  it("an unknown token is a 404", async () => {
    const { key } = await seedTokenTenant();
    expectProblem(await call("GET", `/tokens/${crypto.randomUUID()}`, { key }), 404);
  });

  it("error messages never repeat the data", async () => {
    const { key } = await seedTokenTenant();
    const invalidCard = "4242424242424241";
    for (const [path, body] of [
      ["/tokens", { type: "card_number", data: invalidCard }],
      ["/tokenize", { card: { type: "card_number", data: invalidCard } }],
      ["/tokens", { type: "social_security_number", data: invalidCard }],
    ] as const) {
      const reply = await call("POST", path, { key, body });
      expect(reply.status).toBe(400);
      expect(JSON.stringify(reply.body)).not.toContain("424242");
    }
  });

  it("a public application can create but not read back the data it sent, not even masked in the answer", async () => {
    const tenant = await seedTokenTenant();
    const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const reply = await call("POST", "/tokens", { key: browser.key, body: { type: "card_number", data: VISA } });
    expect(reply.status).toBe(201);
    expect(reply.body).not.toHaveProperty("data");
    expectProblem(await call("GET", `/tokens/${reply.body.id}`, { key: browser.key }), 403);
  });
});
