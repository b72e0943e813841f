import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { DATA_DATABASES } from "../support/context";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createToken, expireToken, patchToken, seedTokenTenant } from "../support/tokens";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const create = (key: string, body: unknown) => call("POST", "/tokens", { key, body });
const read = (key: string, id: string) => call("GET", `/tokens/${encodeURIComponent(id)}`, { key });

async function runScheduledHandler() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "*/15 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("chosen token ids", () => {
  it("without an id a token gets a random UUID", async () => {
    const { key } = await seedTokenTenant();
    expect((await createToken(key, { type: "token", data: "x" })).id).toMatch(UUID);
  });

  it("a literal id is the token's id: read, updated and deleted through it, URL-encoded, spaces included", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { id: "customer 42 · Ünïcode", type: "token", data: "secret" });
    expect(token.id).toBe("customer 42 · Ünïcode");
    expect((await read(key, token.id)).body).toMatchObject({ id: token.id, data: "secret" });
    const patched = await call("PATCH", `/tokens/${encodeURIComponent(token.id)}`, {
      key,
      body: { data: "changed" },
      contentType: "application/merge-patch+json",
    });
    expect(patched.body).toMatchObject({ id: token.id, data: "changed" });
    expect((await call("DELETE", `/tokens/${encodeURIComponent(token.id)}`, { key })).status).toBe(204);
    expectProblem(await read(key, token.id), 404);
  });

  it("chosen ids are case-sensitive; UUIDs are read in any case", async () => {
    const { key } = await seedTokenTenant();
    const chosen = await createToken(key, { id: "Order-ABC", type: "token", data: "x" });
    expectProblem(await read(key, "order-abc"), 404);
    expect((await read(key, chosen.id)).status).toBe(200);
    const random = await createToken(key, { type: "token", data: "y" });
    expect((await read(key, random.id.toUpperCase())).body.id).toBe(random.id);
    const chosenUuid = await createToken(key, { id: "3F2504E0-4F89-41D3-9A0C-0305E82C3301", type: "token", data: "z" });
    expect(chosenUuid.id).toBe("3f2504e0-4f89-41d3-9a0c-0305e82c3301");
  });

  it.each([
    ["ab", "must be 3 to 400 characters"],
    ["x".repeat(401), "must be 3 to 400 characters"],
    [" padded", "must not start or end with white space"],
    ["line\nbreak", "must not hold control characters"],
    ["a/b#c", "must not hold any of #/\\+?[]|&=%<>{}^ (found / #)"],
  ])("a literal id %j that breaks the id rule is a 400 naming id", async (id, message) => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    const problem = expectProblem(await create(key, { id, type: "token", data: "x" }), 400);
    expect(problem.errors).toEqual({ id: [message] });
    expect(await rowCounts()).toEqual(before);
  });

  it("an id that is not a string is a 400", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await create(key, { id: 42, type: "token", data: "x" }), 400).errors).toEqual({ id: ["must be a string"] });
  });

  it("an id taken in the tenant is a 409 and the first token stays as it was", async () => {
    const { key } = await seedTokenTenant();
    await createToken(key, { id: "taken-id", type: "token", data: "first" });
    const before = await rowCounts();
    const problem = expectProblem(await create(key, { id: "taken-id", type: "token", data: "second" }), 409);
    expect(problem.detail).toBe("Token id taken-id is already taken");
    expect(problem.detail).not.toContain("second");
    expect(await rowCounts()).toEqual(before);
    expect((await read(key, "taken-id")).body.data).toBe("first");
  });

  it("of concurrent creates with the same id exactly one succeeds, the others are 409", async () => {
    const { key } = await seedTokenTenant();
    const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => create(key, { id: "raced-id", type: "token", data: `v${i}` })));
    const statuses = replies.map((reply) => reply.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    for (const reply of replies.filter((r) => r.status === 409)) expectProblem(reply, 409);
    const winner = replies.find((reply) => reply.status === 201)!;
    expect((await read(key, "raced-id")).body.data).toBe(winner.body.data);
  });

  it("with deduplicate_token, a taken id whose token has the same fingerprint answers that token instead of 409", async () => {
    const { key } = await seedTokenTenant();
    const first = await createToken(key, { id: "retry-safe", type: "token", data: "same" });
    const again = await create(key, { id: "retry-safe", type: "token", data: "same", deduplicate_token: true });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.id, _extras: { deduplicated: true } });
  });

  it("two tenants may use the same id, each seeing, changing and deleting only its own token", async () => {
    const one = await seedTokenTenant();
    const two = await seedTokenTenant();
    await createToken(one.key, { id: "shared-id", type: "token", data: "one's", metadata: { owner: "one" } });
    expectProblem(await read(two.key, "shared-id"), 404);
    await createToken(two.key, { id: "shared-id", type: "token", data: "two's", metadata: { owner: "two" } });
    expect((await read(one.key, "shared-id")).body).toMatchObject({ data: "one's", tenant_id: one.tenantId });
    expect((await read(two.key, "shared-id")).body).toMatchObject({ data: "two's", tenant_id: two.tenantId });
    expect((await patchToken(two.key, "shared-id", { data: "two's, changed" })).status).toBe(200);
    expect((await read(one.key, "shared-id")).body.data).toBe("one's");
    expect((await call("DELETE", "/tokens/shared-id", { key: one.key })).status).toBe(204);
    expect((await read(two.key, "shared-id")).body).toMatchObject({ data: "two's, changed", metadata: { owner: "two" } });
    const search = await call("POST", "/tokens/search", { key: two.key, body: { query: "metadata.owner:two" } });
    expect(search.body.data.map((token: { id: string }) => token.id)).toEqual(["shared-id"]);
  });

  it("purging one tenant's expired token leaves another tenant's token of the same id whole", async () => {
    const one = await seedTokenTenant();
    const two = await seedTokenTenant();
    await createToken(one.key, { id: "purged-id", type: "token", data: "one's", metadata: { k: "v" } });
    await createToken(two.key, { id: "purged-id", type: "token", data: "two's", metadata: { k: "v" } });
    await expireToken("purged-id", one.tenantId);
    await runScheduledHandler();
    const holders = await Promise.all(
      DATA_DATABASES.map((database) => database.prepare("SELECT tenant_id FROM tokens WHERE id = 'purged-id'").all()),
    );
    expect(holders.flatMap(({ results }) => results)).toEqual([{ tenant_id: two.tenantId }]);
    const search = await call("POST", "/tokens/search", { key: two.key, body: { query: "metadata.k:v" } });
    expect(search.body.data.map((token: { id: string }) => token.id)).toEqual(["purged-id"]);
    expect((await read(two.key, "purged-id")).body.data).toBe("two's");
  });

  it("an expired token's id may be chosen again before the cron purges it", async () => {
    const { key, tenantId } = await seedTokenTenant();
    await createToken(key, { id: "reused-id", type: "token", data: "old", metadata: { era: "old" } });
    await expireToken("reused-id", tenantId);
    const token = await createToken(key, { id: "reused-id", type: "token", data: "new" });
    expect(token).toMatchObject({ id: "reused-id", data: "new", metadata: {} });
    expect((await read(key, "reused-id")).body.data).toBe("new");
    const old = await call("POST", "/tokens/search", { key, body: { query: "metadata.era:old" } });
    expect(old.body.pagination.total_items).toBe(0);
  });

  it("a chosen id is found by search and detokenized", async () => {
    const { key } = await seedTokenTenant();
    await createToken(key, { id: "card on file", type: "token", data: "4242" });
    const search = await call("POST", "/tokens/search", { key, body: { query: 'id:"card on file"' } });
    expect(search.body.data.map((token: { id: string }) => token.id)).toEqual(["card on file"]);
    const detokenized = await call("POST", "/detokenize", { key, body: { pan: "{{ card on file }}" } });
    expect(detokenized.body).toEqual({ pan: "4242" });
  });

  it("an id path parameter that no token can have is a 400 naming id", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await call("GET", "/tokens/a%5Eb", { key }), 400).errors).toEqual({
      id: ["must not hold any of #/\\+?[]|&=%<>{}^ (found ^)"],
    });
    expect(expectProblem(await call("GET", `/tokens/${"x".repeat(401)}`, { key }), 400).errors?.id).toEqual([
      "must be 3 to 400 characters",
    ]);
  });

  it("the OpenAPI document takes the token id path parameter as a string", async () => {
    const document = (await call("GET", "/openapi.json")).body;
    const parameter = document.paths["/tokens/{id}"].get.parameters.find((p: { name: string }) => p.name === "id");
    expect(parameter).toMatchObject({ in: "path", required: true, schema: { type: "string" } });
    expect(parameter.schema).not.toHaveProperty("format");
  });
});

describe("alias expressions", () => {
  it("an id holding {{ }} is rendered over data: alias_preserve_format keeps the format and the last four", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { id: "{{ data | alias_preserve_format: 0, 4 }}", type: "token", data: "111-22-3333" });
    expect(token.id).toMatch(/^\d{3}-\d{2}-3333$/);
    expect(token.id).not.toBe("111-22-3333");
    expect((await read(key, token.id)).body.data).toBe("111-22-3333");
  });

  it("an alias may combine outputs and text (the email example)", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, {
      id: "{{ data.email | split: '@' | first | alias_preserve_length }}@{{ data.email | split: '@' | last }}",
      type: "token",
      data: { email: "john.doe@gmail.com" },
    });
    expect(token.id).toMatch(/^[a-z0-9]{8}@gmail\.com$/);
  });

  it("an alias that renders an id breaking the id rule is a 400 naming id, without quoting it", async () => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    const problem = expectProblem(await create(key, { id: "{{ data }}", type: "token", data: "secret/path" }), 400);
    expect(problem.errors).toEqual({ id: ["the rendered id must not hold any of #/\\+?[]|&=%<>{}^ (found /)"] });
    expect(JSON.stringify(problem)).not.toContain("secret");
    const short = expectProblem(await create(key, { id: "{{ data | slice: 0, 2 }}", type: "token", data: "secret" }), 400);
    expect(short.errors).toEqual({ id: ["the rendered id must be 3 to 400 characters"] });
    expect(await rowCounts()).toEqual(before);
  });

  it("an alias that does not parse is a 400 naming id", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(await create(key, { id: "{{ data | no_such_filter }}", type: "token", data: "x" }), 400);
    expect(problem.errors?.id?.[0]).toContain("is not a valid expression");
  });

  it("an alias whose id is taken is drawn again, and when no free id comes out a random UUID stands in", async () => {
    const { key } = await seedTokenTenant();
    await createToken(key, { id: "fixed-alias", type: "token", data: "first" });
    const token = await createToken(key, { id: "{{ data }}", type: "token", data: "fixed-alias" });
    expect(token.id).toMatch(UUID);
    expect((await read(key, token.id)).body.data).toBe("fixed-alias");
  });
});

describe("chosen ids in POST /tokenize", () => {
  it("a token request's id names its token", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", {
      key,
      body: {
        plain: "x",
        card: { id: "my-card", type: "token", data: "4242" },
        ssn: { id: "{{ data | alias_preserve_format: 0, 4 }}", type: "token", data: "123-45-6789" },
      },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body.card.id).toBe("my-card");
    expect(reply.body.ssn.id).toMatch(/^\d{3}-\d{2}-6789$/);
    expect(reply.body.plain).toMatch(UUID);
  });

  it("a taken id is a 409 naming its path, and nothing is created", async () => {
    const { key } = await seedTokenTenant();
    await createToken(key, { id: "already-here", type: "token", data: "x" });
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/tokenize", { key, body: { fine: "value", dup: { id: "already-here", type: "token", data: "y" } } }),
      409,
    );
    expect(problem.detail).toBe("Token id already-here is already taken (at $.dup)");
    expect(await rowCounts()).toEqual(before);
  });

  it("the same id twice in one payload is a 409 for the second, and nothing is created", async () => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/tokenize", {
        key,
        body: [
          { id: "twice", type: "token", data: "a" },
          { id: "twice", type: "token", data: "b" },
        ],
      }),
      409,
    );
    expect(problem.detail).toBe("Token id twice is already taken (at $[1])");
    expect(await rowCounts()).toEqual(before);
  });

  it("an invalid id is a 400 naming its JSON path", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(await call("POST", "/tokenize", { key, body: { a: { id: "x", type: "token", data: "y" } } }), 400);
    expect(problem.errors).toEqual({ "$.a.id": ["must be 3 to 400 characters"] });
  });
});

describe("chosen ids and permissions", () => {
  it("another tenant's chosen id is a 404 for read, update and delete", async () => {
    const owner = await seedTokenTenant();
    const other = await seedTokenTenant();
    await createToken(owner.key, { id: "private-id", type: "token", data: "x" });
    expectProblem(await read(other.key, "private-id"), 404);
    expectProblem(await patchToken(other.key, "private-id", { data: "y" }), 404);
    expectProblem(await call("DELETE", "/tokens/private-id", { key: other.key }), 404);
    expect((await read(owner.key, "private-id")).body.data).toBe("x");
  });

  it("a caller without token:create gets a 403, not a hint whether the id is taken", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { id: "hidden-id", type: "token", data: "x" });
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expectProblem(await create(reader.key, { id: "hidden-id", type: "token", data: "y" }), 403);
  });
});
