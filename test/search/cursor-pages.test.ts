import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { call, createApplication, expectProblem, type Reply } from "../support/harness";
import { createSession } from "../support/sessions";
import { createToken, expireToken, SSN, seedTokenTenant, type TokenTenant } from "../support/tokens";

/*
 * Tokens v2 (GET /v2/tokens, POST /v2/tokens/search): the same compiled search and rules as v1, a
 * page at a time by an opaque cursor that resumes after the last token of the page before. The
 * cursor is sealed for one tenant, one key's application and one request: anything else is a 400.
 */

type Paged = { pagination: { page_size: number; next?: string }; data: { id: string; [member: string]: unknown }[] };

function listV2(key: string, parameters: Record<string, string | number> = {}): Promise<Reply<Paged>> {
  const search = new URLSearchParams(Object.entries(parameters).map(([name, value]) => [name, String(value)] as [string, string]));
  return call("GET", `/v2/tokens${search.size > 0 ? `?${search}` : ""}`, { key });
}

function searchV2(key: string, body: Record<string, unknown>): Promise<Reply<Paged>> {
  return call("POST", "/v2/tokens/search", { key, body });
}

/** Every page of a request, following `next` until a page has none; each page must be a 200. */
async function allPages(request: (start: string | undefined) => Promise<Reply<Paged>>): Promise<Paged[]> {
  const pages: Paged[] = [];
  let start: string | undefined;
  do {
    const reply = await request(start);
    expect(reply.status, reply.text).toBe(200);
    pages.push(reply.body);
    start = reply.body.pagination.next;
  } while (start !== undefined && pages.length < 50);
  return pages;
}

const idsOf = (pages: Paged[]) => pages.flatMap((page) => page.data.map((token) => token.id));

/** `count` tokens created one after another, returned newest first (the order every list answers). */
async function createTokens(key: string, count: number, body: (index: number) => Record<string, unknown>): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) ids.push((await createToken(key, body(index))).id);
  return ids.reverse();
}

async function seedSeven(): Promise<{ tenant: TokenTenant; newestFirst: string[] }> {
  const tenant = await seedTokenTenant();
  const newestFirst = await createTokens(tenant.key, 7, (index) => ({ type: "token", data: `value-${index}`, metadata: { batch: "b1" } }));
  return { tenant, newestFirst };
}

function expectStartRefused(reply: Reply) {
  const problem = expectProblem(reply, 400);
  expect(problem.errors?.start?.[0], problem.detail).toMatch(/is not a cursor of this request/);
}

describe("GET /v2/tokens and POST /v2/tokens/search: paging by cursor", () => {
  it("GET /v2/tokens pages through every token newest first, three pages of 3, 3 and 1, and the last page has no next", async () => {
    const { tenant, newestFirst } = await seedSeven();
    const pages = await allPages((start) => listV2(tenant.key, { size: 3, ...(start ? { start } : {}) }));
    expect(pages.map((page) => page.data.length)).toEqual([3, 3, 1]);
    expect(pages.map((page) => page.pagination.page_size)).toEqual([3, 3, 3]);
    expect(idsOf(pages)).toEqual(newestFirst);
    expect(pages[2]!.pagination).not.toHaveProperty("next");
    // The order of v1's list, which pages by number.
    const v1 = await call("GET", "/tokens?size=100", { key: tenant.key });
    expect(v1.body.data.map((token: { id: string }) => token.id)).toEqual(newestFirst);
  });

  it("POST /v2/tokens/search pages a boolean query through three pages, finding what v1 finds in the same order", async () => {
    const tenant = await seedTokenTenant();
    const matching = await createTokens(tenant.key, 9, (index) => ({
      type: index % 3 === 2 ? "social_security_number" : "token",
      data: index % 3 === 2 ? `123-45-${String(6700 + index)}` : `value-${index}`,
      metadata: { group: index % 2 === 0 ? "a" : "b" },
      containers: [index % 3 === 1 ? "/pii/high/" : "/general/"],
    }));
    const query = '(metadata.group:a OR metadata.group:b) AND NOT container:"/pii/*"';
    const pages = await allPages((start) => searchV2(tenant.key, { query, size: 2, start }));
    expect(pages.length).toBeGreaterThanOrEqual(3);
    const v1 = await call("POST", "/tokens/search", { key: tenant.key, body: { query, size: 100 } });
    expect(idsOf(pages)).toEqual(v1.body.data.map((token: { id: string }) => token.id));
    expect(idsOf(pages)).toHaveLength(6);
    expect(matching).toEqual(expect.arrayContaining(idsOf(pages)));
  }, 30_000);

  it("a deep page starts after the last token of the page before: tokens deleted or created meanwhile shift nothing", async () => {
    const { tenant, newestFirst } = await seedSeven();
    const first = await listV2(tenant.key, { size: 2 });
    expect(first.body.data.map((token) => token.id)).toEqual(newestFirst.slice(0, 2));
    // An offset would now skip two tokens (the first page shrank) and repeat one (a newer token arrived).
    for (const id of newestFirst.slice(0, 2)) expect((await call("DELETE", `/tokens/${id}`, { key: tenant.key })).status).toBe(204);
    await createToken(tenant.key, { type: "token", data: "newer" });
    const second = await listV2(tenant.key, { size: 2, start: first.body.pagination.next! });
    expect(second.body.data.map((token) => token.id)).toEqual(newestFirst.slice(2, 4));
  });

  it("size is 1 to 100 and defaults to 20; anything else is a 400 naming size", async () => {
    const { tenant } = await seedSeven();
    const defaulted = await listV2(tenant.key);
    expect(defaulted.body.pagination).toEqual({ page_size: 20 });
    expect(defaulted.body.data).toHaveLength(7);
    expect((await searchV2(tenant.key, {})).body.pagination).toEqual({ page_size: 20 });
    expect((await listV2(tenant.key, { size: 100 })).status).toBe(200);
    for (const size of ["0", "101", "-1", "1.5", "x", "1e309"]) {
      expect(expectProblem(await listV2(tenant.key, { size }), 400).errors, size).toHaveProperty("size");
    }
    for (const size of [0, 101, 1.5, "20", null]) {
      expect(expectProblem(await searchV2(tenant.key, { size }), 400).errors, String(size)).toHaveProperty("size");
    }
  });

  it("page numbers, unknown parameters and repeated filters are 400s, never a first page answered again", async () => {
    const { tenant } = await seedSeven();
    expect(expectProblem(await listV2(tenant.key, { page: 2 }), 400).errors?.page?.[0]).toMatch(/pages by cursor/);
    expect(expectProblem(await searchV2(tenant.key, { page: 2 }), 400).detail).toMatch(/unknown field: page/);
    expect(expectProblem(await listV2(tenant.key, { tpye: "token" }), 400).errors).toHaveProperty("tpye");
    const repeated = await call("GET", "/v2/tokens?type=token&type=card", { key: tenant.key });
    expect(expectProblem(repeated, 400).errors?.type?.[0]).toMatch(/only once/);
    const repeatedMetadata = await call("GET", "/v2/tokens?metadata.batch=b1&metadata.batch=b2", { key: tenant.key });
    expect(expectProblem(repeatedMetadata, 400).errors?.["metadata.batch"]?.[0]).toMatch(/only once/);
  });

  it("the query language is v1's: an invalid query is the same 400 naming the column", async () => {
    const tenant = await seedTokenTenant();
    const v1 = expectProblem(await call("POST", "/tokens/search", { key: tenant.key, body: { query: "type:token AND (" } }), 400);
    const v2 = expectProblem(await searchV2(tenant.key, { query: "type:token AND (" }), 400);
    expect(v2.errors).toEqual(v1.errors);
  });

  it("expired tokens are left out of every page", async () => {
    const { tenant, newestFirst } = await seedSeven();
    await expireToken(newestFirst[3]!, tenant.tenantId);
    const pages = await allPages((start) => listV2(tenant.key, { size: 2, ...(start ? { start } : {}) }));
    expect(idsOf(pages)).toEqual(newestFirst.filter((_, index) => index !== 3));
  });
});

describe("GET /v2/tokens filters: terms of the search language, ANDed", () => {
  it("type, container (and below it), fingerprint and metadata, as metadata.<key>= or as the Node SDK's JSON object", async () => {
    const tenant = await seedTokenTenant();
    const high = await createToken(tenant.key, { type: "token", data: "a", containers: ["/pii/high/"], metadata: { Customer: "C1" } });
    const low = await createToken(tenant.key, { type: "token", data: "b", containers: ["/pii/"], metadata: { customer: "c2" } });
    const ssn = await createToken(tenant.key, { type: "social_security_number", data: SSN, containers: ["/pii/high/"] });
    const other = await createToken(tenant.key, { type: "token", data: "a", containers: ["/general/"], metadata: { customer: "c1" } });
    const ids = async (parameters: Record<string, string>) => {
      const reply = await listV2(tenant.key, parameters);
      expect(reply.status, reply.text).toBe(200);
      return reply.body.data.map((token) => token.id).sort();
    };
    expect(await ids({ type: "social_security_number" })).toEqual([ssn.id]);
    expect(await ids({ container: "/pii/" })).toEqual([high.id, low.id, ssn.id].sort());
    expect(await ids({ container: "/PII/High/" })).toEqual([high.id, ssn.id].sort());
    expect(await ids({ fingerprint: high.fingerprint })).toEqual([high.id, other.id].sort());
    expect(await ids({ "metadata.customer": "C1" })).toEqual([high.id, other.id].sort());
    expect(await ids({ metadata: JSON.stringify({ customer: "c1" }) })).toEqual([high.id, other.id].sort());
    expect(await ids({ metadata: JSON.stringify({ customer: "c1" }), container: "/pii/" })).toEqual([high.id]);
    expect(await ids({ type: "token", container: "/pii/", "metadata.customer": "c2" })).toEqual([low.id]);
    expect(await ids({ container: "/nowhere/" })).toEqual([]);
  });

  it("a malformed filter is a 400 naming it", async () => {
    const tenant = await seedTokenTenant();
    const refused = async (parameters: Record<string, string>, member: string) =>
      expect(expectProblem(await listV2(tenant.key, parameters), 400).errors, JSON.stringify(parameters)).toHaveProperty(member);
    await refused({ type: "cardd" }, "type");
    await refused({ container: "pii" }, "container");
    await refused({ container: "/a/*" }, "container");
    await refused({ metadata: "customer=c1" }, "metadata");
    await refused({ metadata: JSON.stringify({ customer: 1 }) }, "metadata");
    await refused({ metadata: JSON.stringify(["c1"]) }, "metadata");
    await refused({ "metadata.": "x" }, "metadata.");
    await refused({ fingerprint: "" }, "fingerprint");
  });

  it("a filter changes the request: a cursor of the list without it is a 400 with it", async () => {
    const { tenant } = await seedSeven();
    const { next } = (await listV2(tenant.key, { size: 2 })).body.pagination;
    expectStartRefused(await listV2(tenant.key, { size: 2, start: next!, "metadata.batch": "b1" }));
    expect((await listV2(tenant.key, { size: 5, start: next! })).status).toBe(200);
  });
});

describe("the cursor: opaque, authenticated, bound to its tenant, key and request", () => {
  it("another query's, another list's, another application's and another tenant's cursor is a 400 naming start", async () => {
    const { tenant } = await seedSeven();
    const query = "metadata.batch:b1";
    const { next } = (await searchV2(tenant.key, { query, size: 2 })).body.pagination;
    expect(next).toBeDefined();
    expect((await searchV2(tenant.key, { query, size: 2, start: next })).status).toBe(200);

    expectStartRefused(await searchV2(tenant.key, { query: "metadata.batch:b2", size: 2, start: next }));
    expectStartRefused(await searchV2(tenant.key, { query: `${query} OR type:card`, size: 2, start: next }));
    expectStartRefused(await listV2(tenant.key, { size: 2, start: next! }));
    const listCursor = (await listV2(tenant.key, { size: 2 })).body.pagination.next!;
    expectStartRefused(await searchV2(tenant.key, { size: 2, start: listCursor }));

    const sameRules = await createApplication(tenant, { type: "private", permissions: ["token:read", "token:search"] });
    expectStartRefused(await searchV2(sameRules.key, { query, size: 2, start: next }));

    const other = await seedTokenTenant();
    await createTokens(other.key, 3, (index) => ({ type: "token", data: `other-${index}`, metadata: { batch: "b1" } }));
    expectStartRefused(await searchV2(other.key, { query, size: 2, start: next }));
  }, 30_000);

  it("a forged, altered or truncated cursor is a 400 naming start, and so is one over 4,096 characters", async () => {
    const { tenant } = await seedSeven();
    const { next } = (await listV2(tenant.key, { size: 2 })).body.pagination;
    const flipped = next!.slice(0, 20) + (next![20] === "A" ? "B" : "A") + next!.slice(21);
    for (const start of [flipped, next!.slice(0, -4), `${next}AAAA`, "A".repeat(96), "not a cursor!", "%00", "AAAAA"]) {
      expectStartRefused(await listV2(tenant.key, { size: 2, start }));
    }
    expect(expectProblem(await listV2(tenant.key, { start: "A".repeat(4097) }), 400).errors).toHaveProperty("start");
    expect(expectProblem(await searchV2(tenant.key, { start: "" }), 400).errors).toHaveProperty("start");
  });

  it("holds neither the token's id nor its data, and two cursors for the same place differ", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "token", data: "oldest" });
    // The last token of the first page, where its cursor points: an id chosen from its data.
    const alias = await createToken(tenant.key, { type: "token", data: "4242-secret", id: "customer-4242-secret" });
    await createToken(tenant.key, { type: "token", data: "newest" });
    const first = await listV2(tenant.key, { size: 2 });
    const again = await listV2(tenant.key, { size: 2 });
    expect(first.body.data.map((token) => token.id)).toContain(alias.id);
    const [a, b] = [first.body.pagination.next!, again.body.pagination.next!];
    expect(a).not.toEqual(b);
    for (const cursor of [a, b]) {
      const bytes = atob(cursor.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (cursor.length % 4)) % 4));
      expect(bytes).not.toContain("4242");
      expect(bytes).not.toContain("secret");
      expect(bytes).not.toContain("customer");
    }
    for (const start of [a, b]) expect((await listV2(tenant.key, { size: 2, start })).body.data.map((token) => token.id)).toHaveLength(1);
  });

  it("fuzzed cursors (a real one altered, cut, extended or spliced with another's) are a 400 or the page itself, never a 5xx", async () => {
    const { tenant } = await seedSeven();
    const other = await seedTokenTenant();
    await createTokens(other.key, 3, (index) => ({ type: "token", data: `o${index}` }));
    const cursors = [
      (await listV2(tenant.key, { size: 2 })).body.pagination.next!,
      (await listV2(tenant.key, { size: 5 })).body.pagination.next!,
      (await listV2(other.key, { size: 1 })).body.pagination.next!,
    ];
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=%. ";
    const mutated = fc
      .tuple(
        fc.constantFrom(...cursors),
        fc.constantFrom(...cursors),
        fc.nat(),
        fc.nat(),
        fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 8 }),
      )
      .map(([a, b, at, length, inserted]) => {
        const cut = at % (a.length + 1);
        return a.slice(0, cut) + inserted + b.slice(Math.min(b.length, cut + (length % 6)));
      });
    await fc.assert(
      fc.asyncProperty(mutated, async (start) => {
        const [listed, searched] = await Promise.all([
          call("GET", `/v2/tokens?size=2&start=${encodeURIComponent(start)}`, { key: tenant.key }),
          searchV2(tenant.key, { size: 2, start }),
        ]);
        for (const reply of [listed, searched]) {
          if (reply.status === 200) {
            expect(cursors).toContain(start);
          } else {
            expect(reply.status, reply.text).toBe(400);
            expect(reply.body.errors).toHaveProperty("start");
          }
        }
      }),
      { numRuns: 40, seed: 20_260_707 },
    );
  }, 60_000);
});

describe("v2 applies v1's access rules to every page", () => {
  it("only tokens in containers where the key holds the permission, each shown by its rule's transform", async () => {
    const tenant = await seedTokenTenant();
    await createTokens(tenant.key, 3, (index) => ({ type: "social_security_number", data: `123-45-678${index}`, containers: ["/pii/"] }));
    await createTokens(tenant.key, 3, (index) => ({
      type: "social_security_number",
      data: `987-65-432${index}`,
      containers: ["/hidden/"],
    }));
    await createTokens(tenant.key, 2, (index) => ({ type: "token", data: `plain-${index}`, containers: ["/general/"] }));
    const reader = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/pii/", transform: "mask", permissions: ["token:read", "token:search"] },
        { priority: 2, container: "/general/", transform: "redact", permissions: ["token:read", "token:search"] },
      ],
    });
    for (const pages of [
      await allPages((start) => listV2(reader.key, { size: 2, ...(start ? { start } : {}) })),
      await allPages((start) => searchV2(reader.key, { size: 2, start })),
    ]) {
      expect(pages.length).toBe(3);
      const tokens = pages.flatMap((page) => page.data);
      expect(tokens).toHaveLength(5);
      for (const token of tokens) {
        if ((token.containers as string[])[0] === "/pii/") {
          expect(token.data).toMatch(/^XXX-XX-678\d$/);
          expect(token).toHaveProperty("fingerprint");
        } else {
          expect(token.containers).toEqual(["/general/"]);
          expect(token).not.toHaveProperty("data");
          expect(token).not.toHaveProperty("fingerprint");
        }
      }
    }
    // A container term or filter outside the key's rules finds nothing, as in v1.
    expect((await listV2(reader.key, { container: "/hidden/" })).body.data).toEqual([]);
    expect((await searchV2(reader.key, { query: "container:/hidden/" })).body.data).toEqual([]);
  }, 30_000);

  it("list needs token:read and search token:search; neither answers a key without it", async () => {
    const tenant = await seedTokenTenant();
    const searcher = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect(expectProblem(await listV2(searcher.key), 403).detail).toMatch(/token:read/);
    expect(expectProblem(await searchV2(reader.key, {}), 403).detail).toMatch(/token:search/);
  });

  it("a session key sees no fingerprint on any page", async () => {
    const tenant = await seedTokenTenant();
    await createTokens(tenant.key, 3, (index) => ({ type: "token", data: `t-${index}` }));
    const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const server = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:read", "token:search", "session:authorize"] }],
    });
    const session = await createSession(browser.key);
    const authorized = await call("POST", "/sessions/authorize", {
      key: server.key,
      body: { nonce: session.nonce, permissions: ["token:read", "token:search"] },
    });
    expect(authorized.status, authorized.text).toBe(200);
    for (const pages of [
      await allPages((start) => listV2(session.session_key, { size: 1, ...(start ? { start } : {}) })),
      await allPages((start) => searchV2(session.session_key, { size: 1, start })),
    ]) {
      expect(pages).toHaveLength(3);
      for (const token of pages.flatMap((page) => page.data)) expect(token).not.toHaveProperty("fingerprint");
    }
  }, 30_000);

  it("each distinct data: value of a v2 search counts as a request, as in v1", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const searcher = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const query = Array.from({ length: 20 }, (_, group) => `data:123-${String(group).padStart(2, "0")}-6789`).join(" OR ");
    const reply = await callConfigured({ KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT }, "POST", "/v2/tokens/search", {
      headers: { "SVC-API-KEY": searcher.key },
      body: { query },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(429);
  });
});
