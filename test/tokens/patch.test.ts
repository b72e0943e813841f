import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createToken, expectedBlindIndexes, patchToken, SSN, seedTokenTenant, storedBlindIndexes, VISA } from "../support/tokens";

describe("PATCH /tokens/{id}", () => {
  it("needs Content-Type application/merge-patch+json (415 otherwise)", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    const reply = await call("PATCH", `/tokens/${token.id}`, { key, body: { metadata: { a: "b" } } });
    expect(expectProblem(reply, 415).detail).toContain("application/merge-patch+json");
  });

  it("object data merges member by member, null removing a member", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: { name: "Ada", address: { city: "London", zip: "N1" }, tmp: 1 } });
    const reply = await patchToken(key, token.id, { data: { address: { zip: null, country: "UK" }, tmp: null, born: 1815 } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.data).toEqual({ name: "Ada", address: { city: "London", country: "UK" }, born: 1815 });
    expect((await call("GET", `/tokens/${token.id}`, { key })).body.data).toEqual(reply.body.data);
  });

  it("string data is replaced, validated by the token's type", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card_number", data: VISA });
    expect((await patchToken(key, token.id, { data: "5555555555554444" })).body.data).toBe("5555555555554444");
    const problem = expectProblem(await patchToken(key, token.id, { data: "5555555555554445" }), 400);
    expect(problem.errors?.data?.[0]).toContain("Luhn");
    expect((await call("GET", `/tokens/${token.id}`, { key })).body.data).toBe("5555555555554444");
  });

  it("data cannot be removed", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    expect(expectProblem(await patchToken(key, token.id, { data: null }), 400).errors?.data).toEqual(["cannot be removed"]);
  });

  it("metadata merges; a null value removes the entry, null metadata removes all", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x", metadata: { a: "1", b: "2" } });
    expect((await patchToken(key, token.id, { metadata: { b: null, c: "3" } })).body.metadata).toEqual({ a: "1", c: "3" });
    expect((await patchToken(key, token.id, { metadata: null })).body.metadata).toEqual({});
  });

  it("containers, search indexes, fingerprint expression, mask and expiry are replaced", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: { a: "x", b: "y" }, search_indexes: ["{{ data.a }}"] });
    const reply = await patchToken(key, token.id, {
      containers: ["/moved/"],
      search_indexes: ["{{ data.b }}"],
      fingerprint_expression: "{{ data.b }}",
      mask: "{{ data.b }}",
      expires_at: "2099-01-01T00:00:00Z",
    });
    expect(reply.body).toMatchObject({
      containers: ["/moved/"],
      search_indexes: ["{{ data.b }}"],
      fingerprint_expression: "{{ data.b }}",
      mask: "{{ data.b }}",
      expires_at: "2099-01-01T00:00:00.000Z",
    });
  });

  it("search indexes and fingerprint are recomputed from the new data", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const reference = await createToken(tenant.key, { type: "social_security_number", data: "987-65-4321" });
    const reply = await patchToken(tenant.key, token.id, { data: "987-65-4321" });
    expect(reply.body.fingerprint).toBe(reference.fingerprint);
    expect(await storedBlindIndexes(token.id)).toEqual(await expectedBlindIndexes(tenant.tenantId, ["987-65-4321", "987654321", "4321"]));
  });

  it("null resets a member to the type's default", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, {
      type: "social_security_number",
      data: SSN,
      containers: ["/elsewhere/"],
      search_indexes: [],
      fingerprint_expression: "{{ data }}",
      mask: "{{ data | last4 }}",
      expires_at: "2099-01-01T00:00:00Z",
    });
    const reply = await patchToken(key, token.id, {
      containers: null,
      search_indexes: null,
      fingerprint_expression: null,
      mask: null,
      expires_at: null,
    });
    expect(reply.body).toMatchObject({
      containers: ["/pii/high/"],
      search_indexes: ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"],
      fingerprint_expression: "{{ data | remove: '-' }}",
      mask: "{{ data | reveal_last: 4 }}",
      expires_at: null,
    });
  });

  it("records who modified the token and when, keeping who created it", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x" });
    const editor = await createApplication(tenant, { type: "private", permissions: ["token:update"] });
    const reply = await patchToken(editor.key, token.id, { metadata: { edited: "yes" } });
    expect(reply.body).toMatchObject({ created_by: tenant.applicationId, created_at: token.created_at, modified_by: editor.id });
    expect(Date.parse(reply.body.modified_at)).toBeGreaterThanOrEqual(Date.parse(token.modified_at));
  });

  it("moving a token between containers needs token:update on both, and token:create where it goes", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x", containers: ["/a/"] });
    const onlyA = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/a/", transform: "reveal", permissions: ["token:update"] }],
    });
    const onlyB = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/b/", transform: "reveal", permissions: ["token:update"] }],
    });
    const both = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/a/", transform: "reveal", permissions: ["token:update"] },
        { priority: 2, container: "/b/", transform: "reveal", permissions: ["token:update"] },
      ],
    });
    expect(expectProblem(await patchToken(both.key, token.id, { containers: ["/b/"] }), 403).detail).toContain("token:create");
    const bothCreatingInB = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/a/", transform: "reveal", permissions: ["token:update"] },
        { priority: 2, container: "/b/", transform: "reveal", permissions: ["token:update", "token:create"] },
      ],
    });
    expect(expectProblem(await patchToken(onlyA.key, token.id, { containers: ["/b/"] }), 403).detail).toContain("/b/");
    expect(expectProblem(await patchToken(onlyB.key, token.id, { containers: ["/b/"] }), 403).detail).toContain("/a/");
    expect((await patchToken(bothCreatingInB.key, token.id, { containers: ["/b/"] })).body.containers).toEqual(["/b/"]);
  });

  it("the type cannot be changed", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "123456789" });
    const problem = expectProblem(await patchToken(key, token.id, { type: "social_security_number" }), 400);
    expect(problem.detail).toContain("unknown field: type");
  });

  it("an invalid patch changes nothing", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: { a: "x" }, search_indexes: ["{{ data.a }}"] });
    const before = await rowCounts();
    const problem = expectProblem(await patchToken(key, token.id, { data: { a: null }, metadata: { k: "v" } }), 400);
    expect(problem.errors?.["search_indexes[0]"]?.[0]).toContain("neither null nor empty");
    expect(await rowCounts()).toEqual(before);
    const read = await call("GET", `/tokens/${token.id}`, { key });
    expect(read.body).toMatchObject({ data: { a: "x" }, metadata: {}, modified_at: token.modified_at });
  });

  it("an expiry in the past is refused", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    const problem = expectProblem(await patchToken(key, token.id, { expires_at: "2001-01-01T00:00:00Z" }), 400);
    expect(problem.errors?.expires_at).toEqual(["must be in the future"]);
  });

  it("an unknown token, or another tenant's, is a 404", async () => {
    const first = await seedTokenTenant();
    const second = await seedTokenTenant();
    const token = await createToken(first.key, { type: "token", data: "x" });
    expectProblem(await patchToken(second.key, token.id, { metadata: { a: "b" } }), 404);
    expectProblem(await patchToken(first.key, crypto.randomUUID(), { metadata: { a: "b" } }), 404);
  });

  it("needs the token:update permission", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x" });
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect(expectProblem(await patchToken(reader.key, token.id, { metadata: { a: "b" } }), 403).detail).toContain("token:update");
  });

  it("answers the updated token with _extras: { deduplicated: false }", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    expect((await patchToken(key, token.id, { data: "y" })).body).toMatchObject({
      id: token.id,
      data: "y",
      _extras: { deduplicated: false },
    });
  });
});

describe("PATCH /tokens/{id} with deduplicate_token", () => {
  it("an update that would duplicate another token answers that token and leaves this one as it was", async () => {
    const { key } = await seedTokenTenant();
    const existing = await createToken(key, { type: "token", data: "same", metadata: { who: "existing" } });
    const patched = await createToken(key, { type: "token", data: "other" });
    const before = await rowCounts();
    const reply = await patchToken(key, patched.id, { data: "same", deduplicate_token: true });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ id: existing.id, data: "same", metadata: { who: "existing" }, _extras: { deduplicated: true } });
    expect(await rowCounts()).toEqual(before);
    expect((await call("GET", `/tokens/${patched.id}`, { key })).body).toMatchObject({ data: "other", modified_at: patched.modified_at });
  });

  it("matches the oldest duplicate of the same type and fingerprint", async () => {
    const { key } = await seedTokenTenant();
    const oldest = await createToken(key, { type: "token", data: "dup" });
    await createToken(key, { type: "token", data: "dup" });
    const patched = await createToken(key, { type: "token", data: "x" });
    expect((await patchToken(key, patched.id, { data: "dup", deduplicate_token: true })).body.id).toBe(oldest.id);
  });

  it("without a duplicate the update applies", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    const reply = await patchToken(key, token.id, { data: "unique", deduplicate_token: true });
    expect(reply.body).toMatchObject({ id: token.id, data: "unique", _extras: { deduplicated: false } });
  });

  it("the token itself is not its own duplicate", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    const reply = await patchToken(key, token.id, { metadata: { a: "b" }, deduplicate_token: true });
    expect(reply.body).toMatchObject({ id: token.id, metadata: { a: "b" }, _extras: { deduplicated: false } });
  });

  it("without deduplicate_token an update may make two tokens equal", async () => {
    const { key } = await seedTokenTenant();
    const existing = await createToken(key, { type: "token", data: "same" });
    const patched = await createToken(key, { type: "token", data: "other" });
    const reply = await patchToken(key, patched.id, { data: "same", deduplicate_token: false });
    expect(reply.body).toMatchObject({ id: patched.id, data: "same", fingerprint: existing.fingerprint, _extras: { deduplicated: false } });
  });

  it("a duplicate the caller may not read is answered without data, metadata, expressions or mask", async () => {
    const tenant = await seedTokenTenant();
    const existing = await createToken(tenant.key, { type: "token", data: "same", metadata: { secret: "meta" }, mask: "{{ data }}" });
    const writer = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:update"] });
    const own = (await call("POST", "/tokens", { key: writer.key, body: { type: "token", data: "mine" } })).body;
    const reply = await patchToken(writer.key, own.id, { data: "same", deduplicate_token: true });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ id: existing.id, type: "token", containers: ["/general/high/"], _extras: { deduplicated: true } });
    for (const member of ["data", "metadata", "fingerprint_expression", "search_indexes", "mask"])
      expect(reply.body).not.toHaveProperty(member);
  });

  it("a token outside the containers where the caller may update is not a duplicate", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "token", data: "same", containers: ["/elsewhere/"] });
    const scoped = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/mine/", transform: "reveal", permissions: ["token:create", "token:update", "token:read"] }],
    });
    const own = (await call("POST", "/tokens", { key: scoped.key, body: { type: "token", data: "x", containers: ["/mine/"] } })).body;
    const reply = await patchToken(scoped.key, own.id, { data: "same", deduplicate_token: true });
    expect(reply.body).toMatchObject({ id: own.id, data: "same", _extras: { deduplicated: false } });
  });

  it("deduplicate_token must be true, false or null", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    expect(expectProblem(await patchToken(key, token.id, { deduplicate_token: "yes" }), 400).errors).toEqual({
      deduplicate_token: ["must be true or false"],
    });
    expect((await patchToken(key, token.id, { deduplicate_token: null })).status).toBe(200);
  });
});
