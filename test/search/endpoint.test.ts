import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { search, searchIds, sorted } from "../support/search";
import { createToken, expireToken, seedTokenTenant, type TokenTenant } from "../support/tokens";

/** POST /tokens/search: the request, the page and its order. */

let tenant: TokenTenant;
let created: { id: string; created_at: string }[];

beforeAll(async () => {
  tenant = await seedTokenTenant();
  created = [];
  for (let i = 0; i < 5; i++)
    created.push(await createToken(tenant.key, { type: "token", data: `token ${i}`, metadata: { batch: "one" } }));
});

/** Newest first: created_at, then id, both descending. */
const newestFirst = (tokens: { id: string; created_at: string }[]) =>
  [...tokens]
    .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
    .map((token) => token.id);

describe("POST /tokens/search", () => {
  it("a null, absent, empty or blank query matches every token the caller may search", async () => {
    const every = sorted(created.map((token) => token.id));
    for (const query of [null, undefined, "", "  "]) expect(sorted(await searchIds(tenant.key, query)), String(query)).toEqual(every);
  });

  it("tokens come newest first (created_at, then id, descending), so pages are stable", async () => {
    expect(await searchIds(tenant.key, "metadata.batch:one")).toEqual(newestFirst(created));
    expect(await searchIds(tenant.key, null)).toEqual(newestFirst(created));
  });

  it("page and size select the page, and pagination counts every match", async () => {
    const pages = [];
    for (const page of [1, 2, 3]) {
      const reply = await search(tenant.key, "metadata.batch:one", { page, size: 2 });
      expect(reply.status).toBe(200);
      expect(reply.body.pagination).toEqual({ total_items: 5, page_number: page, page_size: 2, total_pages: 3 });
      pages.push(...reply.body.data.map((token: { id: string }) => token.id));
    }
    expect(pages).toEqual(newestFirst(created));
  });

  it("page defaults to 1 and size to 20", async () => {
    const reply = await call("POST", "/tokens/search", { key: tenant.key, body: {} });
    expect(reply.status).toBe(200);
    expect(reply.body.pagination).toMatchObject({ page_number: 1, page_size: 20, total_items: 5 });
  });

  it("a page past the last is empty and still counts the matches", async () => {
    const reply = await search(tenant.key, null, { page: 9, size: 2 });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ pagination: { total_items: 5, page_number: 9, page_size: 2, total_pages: 3 }, data: [] });
  });

  it("returns each token as the token API does", async () => {
    const [token] = (await search(tenant.key, `id:${created[0]!.id}`)).body.data;
    const read = await call("GET", `/tokens/${created[0]!.id}`, { key: tenant.key });
    expect(token).toEqual(read.body);
  });

  it("size must be an integer from 1 to 100 and page an integer of at least 1: other values are 400", async () => {
    const refused: [Record<string, unknown>, string, string][] = [
      [{ size: 0 }, "size", "must be at least 1"],
      [{ size: 101 }, "size", "must be at most 100"],
      [{ size: 2.5 }, "size", "must be an integer"],
      [{ size: "10" }, "size", "must be an integer"],
      [{ page: 0 }, "page", "must be at least 1"],
      [{ page: -3 }, "page", "must be at least 1"],
      [{ page: null }, "page", "must be an integer"],
      [{ page: 1_000_001 }, "page", "must be at most 1000000"],
    ];
    for (const [body, field, message] of refused) {
      const problem = expectProblem(await call("POST", "/tokens/search", { key: tenant.key, body }), 400);
      expect(problem.errors, JSON.stringify(body)).toEqual({ [field]: [message] });
    }
  });

  it("query must be a string or null", async () => {
    const problem = expectProblem(await call("POST", "/tokens/search", { key: tenant.key, body: { query: 42 } }), 400);
    expect(problem.errors).toEqual({ query: ["must be a string or null"] });
  });

  it("an unknown member of the body is a 400, so a misspelt query never matches everything", async () => {
    const problem = expectProblem(await call("POST", "/tokens/search", { key: tenant.key, body: { qeury: "type:token" } }), 400);
    expect(problem.errors).toEqual({ body: ["unknown field: qeury"] });
  });

  it("the body must be JSON", async () => {
    expectProblem(await call("POST", "/tokens/search", { key: tenant.key, raw: "query=x", contentType: "text/plain" }), 415);
    expectProblem(await call("POST", "/tokens/search", { key: tenant.key, raw: "{" }), 400);
  });

  it("needs an API key (401) holding token:search (403)", async () => {
    expectProblem(await call("POST", "/tokens/search", { body: {} }), 401);
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const problem = expectProblem(await search(reader.key, null), 403);
    expect(problem.detail).toBe("This operation requires the permission token:search");
  });

  it("expired tokens never appear", async () => {
    const { key } = await seedTokenTenant();
    const kept = await createToken(key, { type: "token", data: "kept", metadata: { batch: "two" } });
    const expired = await createToken(key, { type: "token", data: "expired", metadata: { batch: "two" } });
    await expireToken(expired.id);
    expect(await searchIds(key, "metadata.batch:two")).toEqual([kept.id]);
    expect(await searchIds(key, `id:${expired.id}`)).toEqual([]);
    expect((await search(key, null)).body.pagination.total_items).toBe(1);
  });

  it("reports the time spent inside the worker in Server-Timing", async () => {
    const reply = await search(tenant.key, "metadata.batch:one");
    expect(reply.headers.get("server-timing")).toMatch(/^search;dur=\d+\.\d\d$/);
  });
});
