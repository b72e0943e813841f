import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { seedTokenTenant, SSN, VISA } from "../support/tokens";

const aToken = (data: unknown, type = "token") =>
  expect.objectContaining({ id: expect.any(String), type, data, fingerprint: expect.any(String) });

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

  it("turns every other primitive leaf into a token of type token", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key, body: { name: "Ada", age: 36, vip: true, tags: ["x", 2.5] } });
    expect(reply.body).toEqual({ name: aToken("Ada"), age: aToken(36), vip: aToken(true), tags: [aToken("x"), aToken(2.5)] });
    expect(reply.body.name.containers).toEqual(["/general/high/"]);
  });

  it("leaves null, empty objects and empty arrays as they are", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key, body: { none: null, empty: {}, list: [], value: "v" } });
    expect(reply.body).toEqual({ none: null, empty: {}, list: [], value: aToken("v") });
  });

  it("tokenizes a single request or a single value at the top level", async () => {
    const { key } = await seedTokenTenant();
    expect((await call("POST", "/tokenize", { key, body: { type: "card_number", data: VISA } })).body).toEqual(aToken(VISA, "card_number"));
    expect((await call("POST", "/tokenize", { key, body: "just a string" })).body).toEqual(aToken("just a string"));
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
    expect(new Set(hundred.body.map((token: { id: string }) => token.id)).size).toBe(100);
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
    const masking = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const reply = await call("POST", "/tokenize", { key: masking.key, body: { card: { type: "card_number", data: VISA }, note: "n" } });
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
