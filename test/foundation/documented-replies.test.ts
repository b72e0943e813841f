import { beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { expectDocumentedReply, replyMismatches } from "../support/documented-replies";
import { call, callRoute, seedTenant, type Tenant } from "../support/harness";
import type { Reply } from "../support/reply.mjs";

/*
 * Every reply `call` receives is checked against the response the OpenAPI document declares for its
 * operation and status, with that response's zod schema. These tests feed the check replies that
 * drift from the document, so that it is known to fail them.
 */

let tenant: Tenant;
let application: Reply;

beforeAll(async () => {
  tenant = await seedTenant();
  application = await call("GET", "/applications/key", { key: tenant.managementKey });
});

/** The service's own reply to GET /applications/key, with the changes a test makes. */
function drifted(changes: Partial<Reply>): Reply {
  return { ...application, ...changes };
}

const json = (body: unknown) => ({ body, text: JSON.stringify(body) });

describe("replies held to the OpenAPI document", () => {
  it("accepts the service's reply as documented", () => {
    expect(application.status).toBe(200);
    expect(replyMismatches("GET", "/applications/key", application)).toEqual([]);
  });

  it("names the route, status and member of a body that lacks a documented member", () => {
    const nameless = { ...application.body };
    delete nameless.name;
    expect(replyMismatches("GET", "/applications/key", drifted(json(nameless)))).toEqual([
      "GET /applications/key 200: body.name Invalid input: expected string, received undefined",
    ]);
  });

  it("names a member of the wrong type, inside arrays too", () => {
    const body = { ...application.body, permissions: ["token:read", 7] };
    expect(replyMismatches("GET", "/applications/key", drifted(json(body)))).toEqual([
      "GET /applications/key 200: body.permissions[1] Invalid input: expected string, received number",
    ]);
  });

  it("names a member the documented schema does not list", () => {
    const body = { ...application.body, secret: "s3cr3t" };
    expect(replyMismatches("GET", "/applications/key", drifted(json(body)))).toEqual([
      "GET /applications/key 200: body.secret is not in the documented schema",
    ]);
  });

  it("refuses a status the operation does not document", () => {
    expect(replyMismatches("GET", "/applications/key", drifted({ status: 418 }))).toEqual([
      "GET /applications/key 418: status not documented (documented: 200, 401, 403, 429)",
    ]);
  });

  it("refuses a content type the response does not document", () => {
    expect(replyMismatches("GET", "/applications/key", drifted({ headers: new Headers({ "content-type": "text/plain" }) }))).toEqual([
      'GET /applications/key 200: content type "text/plain" not documented (documented: application/json)',
    ]);
  });

  it("holds errors to the problem schema", () => {
    const problem = drifted({
      status: 401,
      headers: new Headers({ "content-type": "application/problem+json" }),
      ...json({ title: "No" }),
    });
    expect(replyMismatches("GET", "/applications/key", problem)).toEqual([
      "GET /applications/key 401: body.type Invalid input: expected string, received undefined",
      "GET /applications/key 401: body.status Invalid input: expected number, received undefined",
      "GET /applications/key 401: body.detail Invalid input: expected string, received undefined",
    ]);
  });

  it("refuses a body where the document declares none", () => {
    const deleted = drifted({ status: 204, ...json({ deleted: true }) });
    expect(replyMismatches("DELETE", `/applications/${tenant.managementApplicationId}`, deleted)).toEqual([
      "DELETE /applications/{id} 204: a body where the document declares none",
    ]);
  });

  it("refuses a route outside the document that answers anything but the vault's 404 or 405 problem", async () => {
    const unknown = await call("GET", "/nowhere");
    expect(unknown.status).toBe(404);
    expect(replyMismatches("GET", "/nowhere", drifted({ status: 200 }))).toEqual(["GET /nowhere 200: no documented operation answers it"]);
  });

  it("fails the call with its mismatches, naming the route and status", () => {
    const body = { ...application.body, name: null };
    expect(() => expectDocumentedReply("GET", "/applications/key", drifted(json(body)))).toThrow(
      "the reply to GET /applications/key differs from the OpenAPI document:\n" +
        "  GET /applications/key 200: body.name Invalid input: expected string, received null",
    );
  });

  it("types the body of a documented route by its response schema", async () => {
    const reply = await callRoute("GET /applications/key", 200, { key: tenant.managementKey });
    expectTypeOf(reply.body.permissions).toEqualTypeOf<string[]>();
    expect(reply.body.id).toBe(tenant.managementApplicationId);
  });
});
