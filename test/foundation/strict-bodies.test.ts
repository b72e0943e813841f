import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { expectDocumentedReply } from "../support/documented-replies";
import { BASE, call, createApplication, expectProblem, type Reply, rowCounts, seedTenant } from "../support/harness";
import { documentedOperations } from "../support/openapi";
import { readReply } from "../support/reply.mjs";

/*
 * Every route of the OpenAPI document that takes a body refuses, before anything is stored, a body
 * that is not valid UTF-8 and a JSON body nested deeper than the one bound (32 levels). Routes come
 * from the served document, so a new route is covered without a new test.
 */

const DEPTH = 10_000;
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

interface BodyRoute {
  method: string;
  path: string;
  contentType: string;
  operator: boolean;
}

let routes: BodyRoute[] = [];
let keys: string[];

beforeAll(async () => {
  routes = (await documentedOperations())
    // A proxied body is forwarded as the caller sent it, any bytes; test/proxies/bounded-bodies.test.ts bounds it. A
    // document is any bytes too: its form's `request` part is held to UTF-8 in test/documents/documents.test.ts.
    .filter((operation) => operation.bodyType !== null && !operation.path.startsWith("/proxy/") && operation.path !== "/documents")
    .map((operation) => ({
      method: operation.method,
      path: operation.path.replace(/\{[^}]+\}/g, UNKNOWN_ID),
      contentType: operation.bodyType!,
      operator: operation.operator,
    }));
  const tenant = await seedTenant();
  const tokens = await createApplication(tenant, {
    type: "private",
    // session:authorize too, so that POST /sessions/authorize reads its body; token-intent:create for POST /token-intents;
    // google-pay:create, apple-pay:create and apple-pay:session for the wallets.
    permissions: [
      "token:create",
      "token:read",
      "token:update",
      "token:delete",
      "token:search",
      "token:use",
      "token-intent:create",
      "session:authorize",
      "google-pay:create",
      "apple-pay:create",
      "apple-pay:session",
    ],
  });
  keys = [tenant.managementKey, tokens.key];
});

async function send(route: BodyRoute, body: Uint8Array | string): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (const key of keys) {
    const headers: Record<string, string> = { "content-type": route.contentType, "SVC-API-KEY": key };
    if (route.operator) headers["SVC-OPERATOR-KEY"] = env.OPERATOR_API_KEY;
    const response = await SELF.fetch(`${BASE}${route.path}`, { method: route.method, headers, body });
    const reply = await readReply(response);
    expectDocumentedReply(route.method, route.path, reply);
    replies.push(reply);
  }
  return replies;
}

/** A reply the route gives before it reads the body: this key lacks the permission. */
const refusedEarlier = (reply: Reply) => reply.status === 403;

describe("strict request bodies", () => {
  it("finds the body-taking routes in the document", () => {
    expect(routes.length).toBeGreaterThan(10);
  });

  it("refuses invalid UTF-8 with a 400 on every body-taking route, storing nothing", async () => {
    const before = await rowCounts();
    const invalid = new Uint8Array([...new TextEncoder().encode('{"name":"'), 0xc3, 0x28, 0xa0, 0xa1, ...new TextEncoder().encode('"}')]);
    for (const route of routes) {
      const replies = await send(route, invalid);
      expect(
        replies.some((reply) => !refusedEarlier(reply)),
        `${route.method} ${route.path}`,
      ).toBe(true);
      for (const reply of replies.filter((r) => !refusedEarlier(r))) {
        const problem = expectProblem(reply, 400);
        expect(problem.errors, `${route.method} ${route.path}`).toEqual({ body: ["must be valid UTF-8"] });
      }
    }
    expect(await rowCounts()).toEqual(before);
  });

  it(`refuses ${DEPTH}-level nesting with a 400 naming the limit on every body-taking route`, async () => {
    const before = await rowCounts();
    const deep = `{"args":${"[".repeat(DEPTH)}"{{ ${UNKNOWN_ID} }}"${"]".repeat(DEPTH)}}`;
    for (const route of routes.filter(({ contentType }) => contentType.endsWith("json"))) {
      const replies = await send(route, deep);
      for (const reply of replies.filter((r) => !refusedEarlier(r))) {
        const problem = expectProblem(reply, 400);
        expect(problem.errors, `${route.method} ${route.path}`).toEqual({
          body: ["must not nest arrays and objects deeper than 32 levels"],
        });
      }
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("accepts a body 32 levels deep and refuses one 33 levels deep", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    // The body object is the first level; data of n nested arrays adds n more.
    const data = (levels: number) => JSON.parse(`${"[".repeat(levels)}1${"]".repeat(levels)}`);
    const accepted = await call("POST", "/tokens", { key: app.key, body: { type: "token", data: data(31) } });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    const refused = await call("POST", "/tokens", { key: app.key, body: { type: "token", data: data(32) } });
    expect(expectProblem(refused, 400).errors).toEqual({ body: ["must not nest arrays and objects deeper than 32 levels"] });
  });

  it("reads a brace inside a string as text, not as nesting", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const reply = await call("POST", "/tokens", { key: app.key, body: { type: "token", data: `"\\${"[".repeat(100)}` } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  });
});
