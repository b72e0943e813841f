import { env, SELF } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { signIn } from "./console";
import { replyMismatches } from "./documented-replies";
import { BASE, createApplication, seedTenant } from "./harness";
import { type DocumentedOperation, documentedOperations } from "./openapi";
import { readReply } from "./reply.mjs";

/*
 * Every operation of the served OpenAPI document, fed seeded generated requests: wrong types,
 * missing and extra members, huge strings, deep nesting, invalid JSON, invalid UTF-8, wrong content
 * types, non-UUID and unknown path ids. The property: never a 5xx, every 4xx is problem details
 * with a detail, and every reply is one the document declares for the operation. A new route is
 * fuzzed as soon as it is in the document: every operation belongs to one of FUZZ_GROUPS, each
 * fuzzed by a file of its own (test/foundation/fuzz-*.test.ts).
 *
 * Why several files: under vitest-pool-workers each `SELF.fetch` costs a little more than the one
 * before within a file (its waitUntil work is kept until the file ends; the audit send runs there),
 * so ~2,000 requests in one file took four minutes, and far less split in three. A fourth group (applications and
 * sessions) was split off "management" when its last operations neared their 30 s on a loaded machine, and a
 * fifth (the operator's keyring and the tenants' client encryption keys) when /keys pushed the last past it; documents
 * joined the fifth, the smallest.
 */

export const FUZZ_GROUPS = ["tokens", "applications", "management", "extensions", "keys", "wallets"] as const;
export type FuzzGroup = (typeof FUZZ_GROUPS)[number];

/**
 * The group that fuzzes an operation, by its path's first segment after a version (`/v2/tokens`
 * is a tokens operation); anything new falls in "management".
 */
export function fuzzGroupOf(operation: Pick<DocumentedOperation, "path">): FuzzGroup {
  const segments = operation.path.split("/").slice(1);
  const segment = (/^v\d+$/.test(segments[0] ?? "") ? segments[1] : segments[0]) ?? "";
  if (["tokens", "token-intents", "tokenize", "detokenize", "proxy", "permissions"].includes(segment)) return "tokens";
  if (["applications", "sessions"].includes(segment)) return "applications";
  if (segment === "keys" || (segment === "operator" && segments[1] === "keys") || segment === "documents") return "keys";
  if (["reactor-formulas", "reactors", "logs", "webhooks"].includes(segment)) return "extensions";
  if (["google-pay", "apple-pay"].includes(segment)) return "wallets";
  return "management";
}

const SEED = 20_261_122;
const RUNS_PER_OPERATION = 24;
const DEPTH = 10_000;

let keys: string[] = [];
/** A console session of the tenant's management key, as its cookie: the console's own routes are fuzzed with it too. */
let sessionCookie = "";

async function seedKeys(): Promise<void> {
  const tenant = await seedTenant();
  const everything = await createApplication(tenant, {
    type: "private",
    permissions: [
      "token:create",
      "token:read",
      "token:update",
      "token:delete",
      "token:search",
      "token:use",
      "token-intent:create",
      "token-intent:read",
      "token-intent:delete",
      "session:authorize",
      "google-pay:create",
      "apple-pay:create",
      "documents:create",
      "documents:read",
      "documents:reveal",
      "documents:delete",
      "apple-pay:read",
      "apple-pay:reveal",
      "apple-pay:delete",
      "google-pay:read",
      "google-pay:reveal",
      "google-pay:delete",
      "apple-pay:session",
    ],
  });
  // A public key reaches POST /sessions, which refuses every other type of key.
  const page = await createApplication(tenant, {
    type: "public",
    permissions: ["token:create", "token-intent:create", "apple-pay:create", "apple-pay:session"],
  });
  keys = [tenant.managementKey, everything.key, page.key];
  sessionCookie = (await signIn(tenant.managementKey)).cookie;
}

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
  const generic = [
    fc.constant(null),
    wrongTypes,
    extraMember,
    hugeString,
    deep,
    invalidJson,
    invalidUtf8,
    wrongContentType,
    anyJson.map(json),
  ];
  if (operation.bodyType?.startsWith("multipart/"))
    return fc.oneof(...generic, { arbitrary: multipartBodies(members), weight: generic.length });
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

/**
 * Forms for a multipart operation: parts named by its members or not, holding JSON or any text, with
 * or without a media type, the closing boundary sometimes left off.
 */
function multipartBodies(members: string[]): fc.Arbitrary<Body> {
  const part = fc.record({
    name: fc.constantFrom(...members, "other", ""),
    content: fc.oneof(
      anyJson.map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 200 }),
    ),
    type: fc.constantFrom("application/json", "application/pdf", "", "not a type"),
  });
  return fc.record({ parts: fc.array(part, { maxLength: 3 }), closed: fc.boolean() }).map(({ parts, closed }) => ({
    bytes:
      parts
        .map(
          ({ name, content, type }) =>
            `--fuzz\r\ncontent-disposition: form-data; name="${name}"; filename="f"\r\n${type ? `content-type: ${type}\r\n` : ""}\r\n${content}\r\n`,
        )
        .join("") + (closed ? "--fuzz--\r\n" : ""),
    contentType: "multipart/form-data; boundary=fuzz",
  }));
}

const pathIds = fc.oneof(
  fc.uuid().map((id) => id),
  fc.constantFrom("not-a-uuid", "00000000-0000-4000-8000-000000000000", "%00", "..%2F..", "x".repeat(2000), "key"),
);

/** Cursor-shaped text too (base64url of a cursor's length), for `start`: a well-formed cursor that no tenant sealed. */
const queryValues = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom("-1", "0", "1e309", "%FF", "x".repeat(5000)),
  fc.stringMatching(/^[A-Za-z0-9_-]{60,140}$/),
);

/** An API key, or for the console's routes also its session's cookie (sent from the vault's own origin). */
function credentials(operation: DocumentedOperation): fc.Arbitrary<Record<string, string>> {
  const byKey = fc.constantFrom(...keys).map((key) => ({ "SVC-API-KEY": key }));
  if (!operation.path.startsWith("/console/")) return byKey;
  return fc.oneof(byKey, fc.constant({ cookie: sessionCookie, origin: new URL(BASE).origin }));
}

function request(operation: DocumentedOperation) {
  return fc.record({
    credential: credentials(operation),
    id: pathIds,
    body: bodies(operation),
    query: fc.dictionary(fc.constantFrom(...operation.queryNames, "page", "size"), queryValues, { maxKeys: 3 }),
  });
}

/** Fuzzes every documented operation of the group, one test each. */
export async function fuzzGroup(group: FuzzGroup): Promise<void> {
  const operations = (await documentedOperations()).filter((operation) => fuzzGroupOf(operation) === group);
  describe(`OpenAPI-driven fuzzing: ${group}`, () => {
    beforeAll(seedKeys);

    it("has operations to fuzz", () => {
      expect(operations.length).toBeGreaterThan(5);
    });

    it.each(operations.map((operation) => [`${operation.method} ${operation.path}`, operation] as const))(
      "%s never answers a 5xx, every 4xx is problem details with a detail, and every reply is as documented",
      async (_name, operation) => {
        const failures: string[] = [];
        await fc
          .assert(
            fc.asyncProperty(request(operation), async ({ credential, id, body, query }) => {
              const path = operation.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(id));
              const search = new URLSearchParams(query).toString();
              const headers: Record<string, string> = { ...credential };
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
        expect(failures).toEqual([]);
      },
      30_000,
    );
  });
}
