import { env, SELF } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { replyMismatches } from "../support/documented-replies";
import { BASE, createApplication, seedTenant } from "../support/harness";
import { type DocumentedOperation, documentedOperations } from "../support/openapi";
import { readReply } from "../support/reply.mjs";

/*
 * Every operation of the served OpenAPI document, fed seeded generated requests: wrong types,
 * missing and extra members, huge strings, deep nesting, invalid JSON, invalid UTF-8, wrong content
 * types, non-UUID and unknown path ids. The property: never a 5xx, every 4xx is problem details
 * with a detail, and every reply is one the document declares for the operation. A new route is
 * fuzzed as soon as it is in the document.
 */

const SEED = 20_261_122;
const RUNS_PER_OPERATION = 24;
const DEPTH = 10_000;

let operations: DocumentedOperation[] = [];
let keys: string[] = [];

beforeAll(async () => {
  operations = await documentedOperations();
  const tenant = await seedTenant();
  const everything = await createApplication(tenant, {
    type: "private",
    permissions: ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"],
  });
  keys = [tenant.managementKey, everything.key];
});

const anyJson = fc.jsonValue({ maxDepth: 3 });

/** A body as bytes with the content type it claims. */
type Body = { bytes: Uint8Array | string; contentType: string };

function bodies(operation: DocumentedOperation): fc.Arbitrary<Body | null> {
  const json = (value: unknown) => ({ bytes: JSON.stringify(value), contentType: "application/json" });
  const members = operation.bodyMembers.length > 0 ? operation.bodyMembers : ["name", "data", "type"];
  const wrongTypes = fc
    .dictionary(fc.constantFrom(...members), fc.oneof(anyJson, fc.constant(null)), { minKeys: 1 })
    .map((value) => json(value));
  const extraMember = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), anyJson).map(json);
  const hugeString = fc.constantFrom(...members).map((member) => json({ [member]: "x".repeat(200_000) }));
  const deep = fc.constantFrom(...members).map((member) => ({
    bytes: `{"${member}":${"[".repeat(DEPTH)}"{{ 00000000-0000-4000-8000-000000000000 }}"${"]".repeat(DEPTH)}}`,
    contentType: "application/json",
  }));
  const invalidJson = fc
    .constantFrom("{", '{"a":}', "[1,2", "nul", '{"a":1}}')
    .map((text) => ({ bytes: text, contentType: "application/json" }));
  const invalidUtf8 = fc.constantFrom(...members).map((member) => ({
    bytes: new Uint8Array([...new TextEncoder().encode(`{"${member}":"`), 0xc3, 0x28, 0xff, ...new TextEncoder().encode('"}')]),
    contentType: "application/json",
  }));
  const wrongContentType = fc
    .constantFrom("text/plain", "application/xml", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded")
    .map((contentType) => ({ bytes: "a=1&b=2", contentType }));
  return fc.oneof(
    fc.constant(null),
    wrongTypes,
    extraMember,
    hugeString,
    deep,
    invalidJson,
    invalidUtf8,
    wrongContentType,
    anyJson.map(json),
  );
}

const pathIds = fc.oneof(
  fc.uuid().map((id) => id),
  fc.constantFrom("not-a-uuid", "00000000-0000-4000-8000-000000000000", "%00", "..%2F..", "x".repeat(2000), "key"),
);

const queryValues = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom("-1", "0", "1e309", "%FF", "x".repeat(5000)));

function request(operation: DocumentedOperation) {
  return fc.record({
    key: fc.constantFrom(...keys),
    id: pathIds,
    body: bodies(operation),
    query: fc.dictionary(fc.constantFrom(...operation.queryNames, "page", "size"), queryValues, { maxKeys: 3 }),
  });
}

describe("OpenAPI-driven fuzzing", () => {
  it("lists the operations of the served document", () => {
    expect(operations.length).toBeGreaterThan(30);
  });

  it("never answers a 5xx, every 4xx is problem details with a detail, and every reply is as documented", async () => {
    const failures: string[] = [];
    for (const operation of operations) {
      await fc
        .assert(
          fc.asyncProperty(request(operation), async ({ key, id, body, query }) => {
            const path = operation.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(id));
            const search = new URLSearchParams(query).toString();
            const headers: Record<string, string> = { "SVC-API-KEY": key };
            if (operation.operator) headers["SVC-OPERATOR-KEY"] = env.OPERATOR_API_KEY;
            const sendsBody = body !== null && operation.method !== "GET";
            if (sendsBody) headers["content-type"] = body.contentType;
            const reply = await readReply(
              await SELF.fetch(`${BASE}${path}${search ? `?${search}` : ""}`, {
                method: operation.method,
                headers,
                body: sendsBody ? body.bytes : undefined,
              }),
            );
            const where = `${operation.method} ${path} (${sendsBody ? body.contentType : "no body"})`;
            if (reply.status >= 500) {
              failures.push(`${where}: ${reply.status} ${reply.text.slice(0, 200)}`);
              return false;
            }
            if (reply.status >= 400) {
              const detail = reply.body?.detail ?? reply.body?.proxy_error?.detail;
              if (typeof detail !== "string" || detail.length === 0) {
                failures.push(`${where}: ${reply.status} without a detail: ${reply.text.slice(0, 200)}`);
                return false;
              }
            }
            const mismatches = replyMismatches(operation.method, path, reply);
            failures.push(...mismatches.map((mismatch) => `${where}: ${mismatch}`));
            return mismatches.length === 0;
          }),
          { seed: SEED, numRuns: RUNS_PER_OPERATION, endOnFailure: true },
        )
        .catch(() => undefined);
    }
    expect(failures).toEqual([]);
  }, 240_000);
});
