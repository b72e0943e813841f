import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { principalForKey } from "../../src/auth/service";
import worker from "../../src/index";
import { useTokens } from "../../src/tokens/use";
import { DATA_DATABASES, requestContext, tenantContext } from "../support/context";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, expireToken, patchToken, SSN, seedTokenTenant } from "../support/tokens";

const TOKEN_TABLES = ["tokens", "token_containers", "token_metadata", "token_search_index"];

/** Rows that belong to the token in each token table. */
async function rowsOf(tokenId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of TOKEN_TABLES) {
    const column = table === "tokens" ? "id" : "token_id";
    counts[table] = 0;
    for (const database of DATA_DATABASES) {
      counts[table] += (await database
        .prepare(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`)
        .bind(tokenId)
        .first<{ n: number }>())!.n;
    }
  }
  return counts;
}

/** Detokenization as proxies and reactors do it (no HTTP route of the token API exposes it). */
async function detokenize(key: string, ids: string[]) {
  const principal = (await principalForKey(requestContext(), key))!;
  return useTokens(await tenantContext(principal.tenantId), principal, ids);
}

/** How many tokens a search for the id finds. */
async function searchHits(key: string, id: string): Promise<number> {
  const reply = await call("POST", "/tokens/search", { key, body: { query: `id:${id}` } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.pagination.total_items;
}

async function runScheduledHandler() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "*/15 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

const EMPTY = { tokens: 0, token_containers: 0, token_metadata: 0, token_search_index: 0 };

describe("DELETE /tokens/{id}", () => {
  it("deletes the token: 204, then gone from reads", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    const reply = await call("DELETE", `/tokens/${token.id}`, { key });
    expect(reply.status).toBe(204);
    expect(reply.body).toBeNull();
    expectProblem(await call("GET", `/tokens/${token.id}`, { key }), 404);
    expectProblem(await call("DELETE", `/tokens/${token.id}`, { key }), 404);
  });

  it("removes the ciphertext and every index row", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "social_security_number", data: SSN, metadata: { a: "b" } });
    expect(await rowsOf(token.id)).toEqual({ tokens: 1, token_containers: 1, token_metadata: 1, token_search_index: 3 });
    await call("DELETE", `/tokens/${token.id}`, { key });
    expect(await rowsOf(token.id)).toEqual(EMPTY);
  });

  it("a deleted token can no longer be found or detokenized", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x" });
    expect(await searchHits(key, token.id)).toBe(1);
    expect((await detokenize(key, [token.id])).get(token.id)).toBe("x");
    await call("DELETE", `/tokens/${token.id}`, { key });
    expect(await searchHits(key, token.id)).toBe(0);
    await expect(detokenize(key, [token.id])).rejects.toMatchObject({ status: 400, message: expect.stringContaining(token.id) });
  });

  it("another tenant's token is a 404 and stays", async () => {
    const first = await seedTokenTenant();
    const second = await seedTokenTenant();
    const token = await createToken(first.key, { type: "token", data: "x" });
    expectProblem(await call("DELETE", `/tokens/${token.id}`, { key: second.key }), 404);
    expect((await call("GET", `/tokens/${token.id}`, { key: first.key })).status).toBe(200);
  });

  it("needs token:delete on every container of the token", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x", containers: ["/a/", "/b/"] });
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const onlyA = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/a/", transform: "redact", permissions: ["token:delete"] }],
    });
    expect(expectProblem(await call("DELETE", `/tokens/${token.id}`, { key: reader.key }), 403).detail).toContain("token:delete");
    expect(expectProblem(await call("DELETE", `/tokens/${token.id}`, { key: onlyA.key }), 403).detail).toContain("/b/");
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
  });

  it("an id no token can have is a 400; any other unknown id a 404", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await call("DELETE", "/tokens/ab", { key }), 400).errors?.id).toEqual(["must be 3 to 400 characters"]);
    expect(expectProblem(await call("DELETE", "/tokens/not-a-uuid", { key }), 404).detail).toContain("not-a-uuid");
  });
});

describe("expiry", () => {
  it("expires_at must be an ISO 8601 time in the future", async () => {
    const { key } = await seedTokenTenant();
    for (const [expires_at, message] of [
      ["2001-01-01T00:00:00Z", "must be in the future"],
      ["2099-01-01", "must be an ISO 8601 date-time with a time zone"],
      ["2099-01-01T00:00:00", "must be an ISO 8601 date-time with a time zone"],
    ]) {
      const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: "x", expires_at } }), 400);
      expect(problem.errors?.expires_at?.[0]).toContain(message);
    }
  });

  it("expires_at takes the original docs' form, 8/26/2030 7:23:57 PM -07:00, on create and on PATCH", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x", expires_at: "8/26/2030 7:23:57 PM -07:00" });
    expect(token.expires_at).toBe("2030-08-27T02:23:57.000Z");
    const midnight = await createToken(key, { type: "token", data: "y", expires_at: "12/31/2099 12:00:00 AM +00:00" });
    expect(midnight.expires_at).toBe("2099-12-31T00:00:00.000Z");
    const noon = await createToken(key, { type: "token", data: "z", expires_at: "01/02/2099 12:30:00 PM +05:30" });
    expect(noon.expires_at).toBe("2099-01-02T07:00:00.000Z");
    const patched = await patchToken(key, token.id, { expires_at: "1/1/2031 1:02:03 PM +01:00" });
    expect(patched.body.expires_at).toBe("2031-01-01T12:02:03.000Z");
  });

  it("the docs' form is read strictly: anything else in its shape is a 400, never a guess", async () => {
    const { key } = await seedTokenTenant();
    for (const expires_at of [
      "2/30/2099 7:23:57 PM -07:00",
      "13/26/2099 7:23:57 PM -07:00",
      "8/26/2099 13:23:57 PM -07:00",
      "8/26/2099 0:23:57 AM -07:00",
      "8/26/2099 7:60:57 PM -07:00",
      "8/26/2099 7:23:57 pm -07:00",
      "8/26/2099 7:23:57 PM",
      "8/26/2099 7:23:57 PM -15:00",
      "8/26/2099 7:23:57 PM -0700",
      "8/26/99 7:23:57 PM -07:00",
      "26/8/2099 7:23:57 PM -07:00",
      "8/26/2099 7:23 PM -07:00",
      " 8/26/2099 7:23:57 PM -07:00",
      "Aug 26 2099 19:23:57 GMT-0700",
      "2099",
      "tomorrow",
    ]) {
      const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: "x", expires_at } }), 400);
      expect(problem.errors?.expires_at?.[0], expires_at).toContain("must be an ISO 8601 date-time with a time zone");
    }
    const past = expectProblem(
      await call("POST", "/tokens", { key, body: { type: "token", data: "x", expires_at: "8/26/2001 7:23:57 PM -07:00" } }),
      400,
    );
    expect(past.errors?.expires_at).toEqual(["must be in the future"]);
  });

  it("a token is readable until it expires, and its expiry is returned in UTC", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x", expires_at: "2099-06-01T12:00:00+02:00" });
    expect(token.expires_at).toBe("2099-06-01T10:00:00.000Z");
    expect((await call("GET", `/tokens/${token.id}`, { key })).status).toBe(200);
  });

  it("an expired token behaves as deleted for read, search, update, delete and detokenization", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x", expires_at: "2099-01-01T00:00:00Z" });
    expect(await searchHits(key, token.id)).toBe(1);
    await expireToken(token.id);
    expect(await searchHits(key, token.id)).toBe(0);
    expectProblem(await call("GET", `/tokens/${token.id}`, { key }), 404);
    expectProblem(await patchToken(key, token.id, { metadata: { a: "b" } }), 404);
    expectProblem(await call("DELETE", `/tokens/${token.id}`, { key }), 404);
    await expect(detokenize(key, [token.id])).rejects.toMatchObject({ status: 400, message: expect.stringContaining(token.id) });
  });

  it("the scheduled handler purges expired tokens with their index rows, and keeps the others", async () => {
    const { key } = await seedTokenTenant();
    const expired = await createToken(key, { type: "social_security_number", data: SSN, expires_at: "2099-01-01T00:00:00Z" });
    const expiring = await createToken(key, { type: "social_security_number", data: SSN, expires_at: "2099-01-01T00:00:00Z" });
    const lasting = await createToken(key, { type: "social_security_number", data: SSN, metadata: { a: "b" } });
    await expireToken(expired.id);
    await runScheduledHandler();
    expect(await rowsOf(expired.id)).toEqual(EMPTY);
    expect((await rowsOf(expiring.id)).tokens).toBe(1);
    expect(await rowsOf(lasting.id)).toEqual({ tokens: 1, token_containers: 1, token_metadata: 1, token_search_index: 3 });
  });
});
