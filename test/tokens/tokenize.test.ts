import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { SSN, seedTokenTenant, VISA } from "../support/tokens";

const aToken = (data: unknown, type = "token") =>
  expect.objectContaining({ id: expect.any(String), type, data, fingerprint: expect.any(String) });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const anId = expect.stringMatching(UUID);

/** The token behind an id from a tokenize answer, as the caller reads it. */
const read = async (key: string, id: string) => (await call("GET", `/tokens/${id}`, { key })).body;

describe("POST /tokenize", () => {
  it("replaces each object with type and data by its token, keeping the shape of the payload", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", {
      key,
      body: {
        customer: { ssn: { type: "social_security_number", data: SSN, metadata: { source: "form" } } },
        cards: [{ type: "card_number", data: VISA }],
      },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toEqual({
      customer: { ssn: aToken(SSN, "social_security_number") },
      cards: [aToken(VISA, "card_number")],
    });
    expect(reply.body.customer.ssn).toMatchObject({ metadata: { source: "form" }, containers: ["/pii/high/"] });
  });

  it("answers every other primitive leaf with the id of a new token of type token", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key, body: { name: "Ada", age: 36, vip: true, tags: ["x", 2.5] } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toEqual({ name: anId, age: anId, vip: anId, tags: [anId, anId] });
    expect(await read(key, reply.body.name)).toMatchObject({ type: "token", data: "Ada", containers: ["/general/high/"] });
    expect((await read(key, reply.body.age)).data).toBe(36);
    expect((await read(key, reply.body.vip)).data).toBe(true);
    expect((await read(key, reply.body.tags[1])).data).toBe(2.5);
  });

  it("leaves null, empty objects and empty arrays as they are", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key, body: { none: null, empty: {}, list: [], value: "v" } });
    expect(reply.body).toEqual({ none: null, empty: {}, list: [], value: anId });
  });

  it("answers a single request at the top level with its token, a single value with its id", async () => {
    const { key } = await seedTokenTenant();
    expect((await call("POST", "/tokenize", { key, body: { type: "card_number", data: VISA } })).body).toEqual(aToken(VISA, "card_number"));
    const single = await call("POST", "/tokenize", { key, body: "just a string" });
    expect(single.body).toEqual(anId);
    expect((await read(key, single.body)).data).toBe("just a string");
  });

  it("answers an array of values and requests element by element, as the documented example", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", {
      key,
      body: ["John", "Doe", { type: "card_number", data: VISA }, { type: "token", data: "Sensitive Value" }],
    });
    expect(reply.body).toEqual([anId, anId, aToken(VISA, "card_number"), aToken("Sensitive Value")]);
    expect((await read(key, reply.body[1])).data).toBe("Doe");
  });

  it("gives a token object in the answer the members of a token, and no others", async () => {
    const { key, tenantId, applicationId } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key, body: { card: { type: "card_number", data: VISA, metadata: { a: "b" } } } });
    expect(Object.keys(reply.body.card).sort()).toEqual(
      [
        "_extras",
        "containers",
        "created_at",
        "created_by",
        "data",
        "expires_at",
        "fingerprint",
        "fingerprint_expression",
        "id",
        "mask",
        "metadata",
        "modified_at",
        "modified_by",
        "search_indexes",
        "tenant_id",
        "type",
      ].sort(),
    );
    expect(reply.body.card).toMatchObject({
      tenant_id: tenantId,
      created_by: applicationId,
      metadata: { a: "b" },
      _extras: { deduplicated: false },
    });
    expect(await read(key, reply.body.card.id)).toEqual(expect.objectContaining({ id: reply.body.card.id, data: VISA }));
  });

  it("keeps an object's data whole when it has type and data", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key, body: { person: { type: "token", data: { first: "Ada", last: "Lovelace" } } } });
    expect(reply.body.person).toEqual(aToken({ first: "Ada", last: "Lovelace" }));
  });

  it("applies the full create rules to each request: defaults, search indexes, expressions", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", {
      key,
      body: { t: { type: "token", data: { a: "x" }, search_indexes: ["{{ data.a }}"], containers: ["/Custom/"] } },
    });
    expect(reply.body.t).toMatchObject({ search_indexes: ["{{ data.a }}"], containers: ["/custom/"] });
  });

  it("is all or nothing: one invalid entry fails the request with a 400 naming its JSON path, and nothing is created", async () => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/tokenize", {
        key,
        body: {
          fine: "value",
          people: [{ ssn: { type: "social_security_number", data: SSN } }, { ssn: { type: "social_security_number", data: "12-34" } }],
          "card number": { type: "card_number", data: VISA, search_indexes: ["{{ data }}"] },
        },
      }),
      400,
    );
    expect(Object.keys(problem.errors!)).toHaveLength(2);
    expect(problem.errors).toHaveProperty(["$.people[1].ssn.data"]);
    expect(problem.errors).toHaveProperty(['$["card number"].search_indexes']);
    expect(problem.detail).toContain("$.people[1].ssn.data");
    expect(await rowCounts()).toEqual(before);
  });

  it("an expression that fails on one entry names that entry's path", async () => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/tokenize", { key, body: [{ type: "token", data: {}, search_indexes: ["{{ data.a }}"] }] }),
      400,
    );
    expect(problem.errors?.["$[0].search_indexes[0]"]?.[0]).toContain("neither null nor empty");
    expect(await rowCounts()).toEqual(before);
  });

  it("accepts 100 tokens and refuses 101", async () => {
    const { key } = await seedTokenTenant();
    const hundred = await call("POST", "/tokenize", { key, body: Array.from({ length: 100 }, (_, i) => `value-${i}`) });
    expect(hundred.status).toBe(201);
    expect(new Set(hundred.body).size).toBe(100);
    const before = await rowCounts();
    const problem = expectProblem(await call("POST", "/tokenize", { key, body: Array.from({ length: 101 }, (_, i) => i) }), 400);
    expect(problem.detail).toContain("at most 100");
    expect(await rowCounts()).toEqual(before);
  });

  it("a payload without values to tokenize creates nothing and comes back unchanged", async () => {
    const { key } = await seedTokenTenant();
    expect((await call("POST", "/tokenize", { key, body: { a: [], b: null } })).body).toEqual({ a: [], b: null });
  });

  it("refuses nesting deeper than 32 levels", async () => {
    const { key } = await seedTokenTenant();
    let body: unknown = "deep";
    for (let i = 0; i < 40; i++) body = [body];
    expect(expectProblem(await call("POST", "/tokenize", { key, body }), 400).detail).toContain("deeper than 32 levels");
  });

  it("needs token:create on every container it writes to, and then creates nothing", async () => {
    const tenant = await seedTokenTenant();
    const general = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "mask", permissions: ["token:create"] }],
    });
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/tokenize", { key: general.key, body: { ok: "x", card: { type: "card_number", data: VISA } } }),
      403,
    );
    expect(problem.detail).toContain("/pci/high/");
    expect(problem.detail).toContain("$.card");
    expect(await rowCounts()).toEqual(before);
  });

  it("returns each token's data per the caller's create transform", async () => {
    const tenant = await seedTokenTenant();
    // A private key: a public key's answers carry no data at all (rule 8).
    const masking = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:create"] }],
    });
    const reply = await call("POST", "/tokenize", {
      key: masking.key,
      body: { card: { type: "card_number", data: VISA }, note: { type: "token", data: "n" } },
    });
    expect(reply.body.card.data).toBe("XXXXXXXXXXXX4242");
    expect(reply.body.note).not.toHaveProperty("data");
  });

  it("replays the first response for a repeated idempotency key", async () => {
    const { key } = await seedTokenTenant();
    const headers = { "SVC-IDEMPOTENCY-KEY": "tokenize-once" };
    const first = await call("POST", "/tokenize", { key, body: { a: "x" }, headers });
    const before = await rowCounts();
    const second = await call("POST", "/tokenize", { key, body: { a: "x" }, headers });
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(await rowCounts()).toEqual(before);
  });
});
