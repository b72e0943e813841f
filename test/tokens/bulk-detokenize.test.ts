import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, expireToken, seedTokenTenant, VISA } from "../support/tokens";

const CARD = { number: VISA, expiration_month: 11, expiration_year: 2030, cvc: "123" };

const detokenize = (key: string, body: unknown) => call("POST", "/detokenize", { key, body });

describe("POST /detokenize", () => {
  it("returns the same JSON with every expression replaced, at every depth", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "token", data: CARD });
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    const reply = await detokenize(tenant.key, {
      card: `{{ ${card.id} }}`,
      number: `{{ ${card.id} | json: '$.number' }}`,
      people: [{ greeting: `Hello {{ ${name.id} | upcase }}!`, age: 36, vip: true, note: null }],
      [`{{ ${name.id} }}`]: "keys stay",
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({
      card: CARD,
      number: VISA,
      people: [{ greeting: "Hello ADA!", age: 36, vip: true, note: null }],
      [`{{ ${name.id} }}`]: "keys stay",
    });
  });

  it("takes any JSON value as body: a string, an array, a number", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    expect((await detokenize(tenant.key, `{{ ${name.id} }}`)).body).toBe("Ada");
    expect((await detokenize(tenant.key, [`{{ ${name.id} }}`, 1])).body).toEqual(["Ada", 1]);
    expect((await detokenize(tenant.key, 42)).body).toBe(42);
  });

  it("returns a body without expressions unchanged, unclosed braces included", async () => {
    const tenant = await seedTokenTenant();
    const body = { a: "plain {text}", b: [1.5, { c: "}} then {{ never closed" }], d: false };
    const reply = await detokenize(tenant.key, body);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(body);
  });

  it("needs token:use (403 naming it)", async () => {
    const tenant = await seedTokenTenant();
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect(expectProblem(await detokenize(reader.key, { a: 1 }), 403).detail).toContain("token:use");
  });

  it("needs an API key (401)", async () => {
    expectProblem(await call("POST", "/detokenize", { body: { a: 1 } }), 401);
  });

  it("needs token:use on the container of every token it detokenizes (403)", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const general = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "reveal", permissions: ["token:use"] }],
    });
    const problem = expectProblem(await detokenize(general.key, { card: `{{ ${card.id} }}` }), 403);
    expect(problem.detail).toContain(card.id);
    expect(JSON.stringify(problem)).not.toContain(VISA);
  });

  it("shows the data through the caller's token:use transform", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const masked = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:use"] }],
    });
    expect((await detokenize(masked.key, { card: `{{ ${card.id} }}` })).body).toEqual({ card: "XXXXXXXXXXXX4242" });
  });

  it("refuses a missing body (400)", async () => {
    const tenant = await seedTokenTenant();
    const problem = expectProblem(await call("POST", "/detokenize", { key: tenant.key }), 400);
    expect(problem.errors).toEqual({ body: ["is required"] });
  });

  it("refuses a body that is not JSON (415 for another type, 400 for malformed JSON)", async () => {
    const tenant = await seedTokenTenant();
    expectProblem(await call("POST", "/detokenize", { key: tenant.key, raw: "a=1", contentType: "text/plain" }), 415);
    expectProblem(await call("POST", "/detokenize", { key: tenant.key, raw: '{"a": ' }), 400);
  });

  it("refuses an unknown, deleted or expired token (400 naming it)", async () => {
    const tenant = await seedTokenTenant();
    const deleted = await createToken(tenant.key, { type: "token", data: "gone" });
    await call("DELETE", `/tokens/${deleted.id}`, { key: tenant.key });
    const expired = await createToken(tenant.key, { type: "token", data: "old" });
    await expireToken(expired.id);
    for (const id of ["00000000-0000-4000-8000-000000000000", deleted.id, expired.id]) {
      expect(expectProblem(await detokenize(tenant.key, { a: `{{ ${id} }}` }), 400).detail).toContain(id);
    }
  });

  it("refuses an invalid expression with a plain problem naming the JSON path (400)", async () => {
    const tenant = await seedTokenTenant();
    const reply = await detokenize(tenant.key, {
      card: [{ number: "{{ a/b }}" }],
      other: "{{ 00000000-0000-4000-8000-000000000000 | nope }}",
    });
    const problem = expectProblem(reply, 400);
    expect(Object.keys(problem.errors!).sort()).toEqual(["card[0].number", "other"]);
    expect(problem.errors!["card[0].number"]![0]).toContain("invalid detokenization expression {{ a/b }}");
    expect(problem.errors!.other![0]).toContain("nope");
    expect(reply.body).not.toHaveProperty("proxy_error");
  });

  it("names the body itself when it is one string", async () => {
    const tenant = await seedTokenTenant();
    expect(Object.keys(expectProblem(await detokenize(tenant.key, "{{ x }}"), 400).errors!)).toEqual(["body"]);
  });

  it("refuses a filter that fails when evaluated (400 naming the path), never echoing the data", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "token", data: CARD });
    const problem = expectProblem(await detokenize(tenant.key, { month: `{{ ${card.id} | json: '$.number' | to_boolean }}` }), 400);
    expect(Object.keys(problem.errors!)).toEqual(["month"]);
    expect(JSON.stringify(problem)).not.toContain(VISA);
  });

  it("accepts 100 expressions and refuses 101 (400)", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    const expressions = (count: number) => Array.from({ length: count }, () => `{{ ${name.id} }}`);
    expect((await detokenize(tenant.key, expressions(100))).body).toEqual(Array.from({ length: 100 }, () => "Ada"));
    expect(expectProblem(await detokenize(tenant.key, expressions(101)), 400).detail).toContain("100");
  });

  it("is described in the OpenAPI document", async () => {
    const document = (await call("GET", "/openapi.json")).body;
    const operation = document.paths["/detokenize"].post;
    expect(operation.requestBody.content).toHaveProperty(["application/json"]);
    expect(Object.keys(operation.responses).sort()).toEqual(["200", "400", "401", "403", "413", "415", "429"]);
  });
});

describe("POST /detokenize: the original docs' token list", () => {
  it("answers {tokens: [id, id]} with the tokens, their data under the caller's token:use rule", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "secret data", metadata: { source: "web" } });
    const card = await createToken(tenant.key, { type: "card", data: CARD });
    const reply = await detokenize(tenant.key, { tokens: [name.id, card.id] });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({
      tokens: [
        {
          id: name.id,
          type: "token",
          tenant_id: tenant.tenantId,
          data: "secret data",
          containers: ["/general/high/"],
          metadata: { source: "web" },
          expires_at: null,
          created_by: name.created_by,
          created_at: name.created_at,
          modified_by: name.modified_by,
          modified_at: name.modified_at,
        },
        expect.objectContaining({ id: card.id, type: "card", data: CARD }),
      ],
    });
  });

  it("takes the docs' full token expressions {{ token: <id> }} in the list the same way", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    const reply = await detokenize(tenant.key, { tokens: [`{{ token: ${name.id} }}`, `{{token:${name.id}}}`] });
    expect(reply.body.tokens.map((token: { id: string; data: unknown }) => [token.id, token.data])).toEqual([
      [name.id, "Ada"],
      [name.id, "Ada"],
    ]);
  });

  it("detokenizes the list's data-only expressions and the body's other members as before", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    const reply = await detokenize(tenant.key, {
      tokens: [name.id, `{{ ${name.id} | upcase }}`, 7, null],
      greeting: `Hi {{ ${name.id} }}`,
    });
    expect(reply.body).toEqual({ tokens: [expect.objectContaining({ id: name.id, data: "Ada" }), "ADA", 7, null], greeting: "Hi Ada" });
  });

  it("shows each token's data masked under a masking use rule, and never its fingerprint or expressions", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const masked = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:use"] }],
    });
    const [token] = (await detokenize(masked.key, { tokens: [card.id] })).body.tokens;
    expect(token.data).toBe("XXXXXXXXXXXX4242");
    for (const member of ["fingerprint", "fingerprint_expression", "search_indexes", "mask"]) expect(token).not.toHaveProperty(member);
  });

  it("needs token:use on every container of each listed token (403), and shows nothing of it", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const general = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "reveal", permissions: ["token:use"] }],
    });
    const problem = expectProblem(await detokenize(general.key, { tokens: [card.id] }), 403);
    expect(JSON.stringify(problem)).not.toContain(VISA);
  });

  it("refuses an unknown, expired or another tenant's token (400 naming it), and an entry that is no token id", async () => {
    const tenant = await seedTokenTenant();
    const other = await seedTokenTenant();
    const theirs = await createToken(other.key, { type: "token", data: "theirs" });
    const expired = await createToken(tenant.key, { type: "token", data: "old" });
    await expireToken(expired.id);
    for (const id of ["00000000-0000-4000-8000-000000000000", theirs.id, expired.id]) {
      const problem = expectProblem(await detokenize(tenant.key, { tokens: [id] }), 400);
      expect(problem.detail).toContain(id);
      expect(JSON.stringify(problem)).not.toContain("theirs");
    }
    const malformed = expectProblem(await detokenize(tenant.key, { tokens: ["ab", "{{ token: a/b }}"] }), 400);
    expect(Object.keys(malformed.errors!).sort()).toEqual(["tokens[0]", "tokens[1]"]);
  });

  it("counts listed tokens against the 100 references of one request", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    const listed = (count: number) => Array.from({ length: count }, () => name.id);
    expect((await detokenize(tenant.key, { tokens: listed(100) })).body.tokens).toHaveLength(100);
    expect(expectProblem(await detokenize(tenant.key, { tokens: listed(101) }), 400).detail).toContain("100");
    const mixed = { tokens: listed(60), other: Array.from({ length: 41 }, () => `{{ ${name.id} }}`) };
    expect(expectProblem(await detokenize(tenant.key, mixed), 400).detail).toContain("100");
  });

  it("leaves a tokens member that is not an array, and a list nested deeper, as any other JSON", async () => {
    const tenant = await seedTokenTenant();
    const name = await createToken(tenant.key, { type: "token", data: "Ada" });
    expect((await detokenize(tenant.key, { tokens: name.id })).body).toEqual({ tokens: name.id });
    expect((await detokenize(tenant.key, { inner: { tokens: [name.id] } })).body).toEqual({ inner: { tokens: [name.id] } });
  });
});
