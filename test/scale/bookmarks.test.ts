import { describe, expect, it } from "vitest";
import { call, expectProblem } from "../support/harness";
import { createProxy, invoke } from "../support/proxies";
import { createToken, seedTokenTenant } from "../support/tokens";

/*
 * Read replication: reads that may be a little stale (list, get, search) run in a D1 session at the
 * nearest replica; a write answers its bookmark, and a request that sends it back reads at least
 * that fresh. Locally every session runs against the one instance: the code path is production's.
 */

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;
const HEADER = "SVC-CONSISTENCY-BOOKMARK";

describe("consistency bookmarks", () => {
  it("a write answers the bookmark where it left the tenant's data database", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokens", { key, body: { type: "token", data: "written" } });
    expect(reply.status).toBe(201);
    expect(reply.headers.get(HEADER)).toMatch(BOOKMARK);
  });

  it("a read sent with a write's bookmark sees the write, and answers a bookmark no older", async () => {
    const { key } = await seedTokenTenant();
    const write = await call("POST", "/tokens", { key, body: { type: "token", data: "fresh" } });
    const written = write.headers.get(HEADER)!;
    const read = await call("GET", `/tokens/${write.body.id}`, { key, headers: { [HEADER]: written } });
    expect(read.status).toBe(200);
    expect(read.body.data).toBe("fresh");
    expect(read.headers.get(HEADER)! >= written).toBe(true);
    const search = await call("POST", "/tokens/search", { key, body: { query: `id:${write.body.id}` }, headers: { [HEADER]: written } });
    expect(search.body.data.map((token: { id: string }) => token.id)).toEqual([write.body.id]);
  });

  it("a malformed bookmark is a 400 naming the header, before anything is read", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(await call("GET", "/tokens", { key, headers: { [HEADER]: "not-a-bookmark" } }), 400);
    expect(problem.detail).toContain("svc-consistency-bookmark");
  });

  it("a route that does not touch token data answers no bookmark", async () => {
    const { managementKey } = await seedTokenTenant();
    const reply = await call("GET", "/applications", { key: managementKey });
    expect(reply.status).toBe(200);
    expect(reply.headers.get(HEADER)).toBeNull();
  });

  it("a token created a moment ago is detokenized at once by a proxy, which reads the primary", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "just made" });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: tenant.applicationId } });
    const forwarded = await invoke("POST", "", { proxyKey: proxy.key, body: { value: `{{ ${token.id} }}` } });
    expect(JSON.parse(forwarded.json.body)).toEqual({ value: "just made" });
  });
});
