import { beforeAll, describe, expect, it } from "vitest";
import { dataDatabaseOf } from "../support/context";
import { call, expectProblem } from "../support/harness";
import { encryptJwe } from "../support/jwe";
import { seedIntentTenant } from "../support/token-intents";
import { seedTokenTenant, type TokenTenant } from "../support/tokens";

/*
 * Attacks on the JWE path of POST /tokens and POST /tokenize: what a JWE's plaintext may carry past
 * the checks that hold plain bodies (docs/security.md, "3. Every expression is bounded").
 */

let tenant: TokenTenant;
let clientKey: { id: string; public_key_pem: string };

async function tokenCount(tenantId: string): Promise<number> {
  const db = await dataDatabaseOf(tenantId);
  return (await db.prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>())!.n;
}

beforeAll(async () => {
  tenant = await seedTokenTenant();
  const reply = await call("POST", "/keys", { key: tenant.managementKey, body: {} });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  clientKey = reply.body;
});

describe("JWE plaintext is held to the limits of a plain body", () => {
  // A plain body nesting deeper than 32 levels is a 400 before it is parsed; the same data inside a
  // JWE was parsed and stored unchecked, and deep enough it overflows the stack of the code that
  // walks it (a 500), or is stored for every later read, search and proxy to walk.
  it.each([
    ["POST", "/tokens", (jwe: string) => ({ type: "token", data: jwe })],
    ["POST", "/tokenize", (jwe: string) => ({ leaf: jwe })],
  ])("%s %s refuses a JWE whose plaintext nests deeper than a body may, storing nothing", async (method, path, bodyOf) => {
    for (const depth of [32, 20_000]) {
      const deep = `${"[".repeat(depth)}1${"]".repeat(depth)}`;
      const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, deep);
      const before = await tokenCount(tenant.tenantId);
      const problem = expectProblem(await call(method, path, { key: tenant.key, body: bodyOf(jwe) }), 400);
      expect(JSON.stringify(problem.errors)).toContain("plaintext nests arrays and objects deeper than 31 levels");
      expect(await tokenCount(tenant.tenantId)).toBe(before);
    }
  });

  it("accepts a JWE whose plaintext nests as deep as a plain body's data may (31 levels)", async () => {
    const deep = `${"[".repeat(31)}1${"]".repeat(31)}`;
    const plain = await call("POST", "/tokens", { key: tenant.key, body: { type: "token", data: JSON.parse(deep) } });
    expect(plain.status, JSON.stringify(plain.body)).toBe(201);
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, deep);
    const reply = await call("POST", "/tokens", { key: tenant.key, body: { type: "token", data: jwe } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  });
});

describe("JWE data where the vault does not open it is refused, never stored as the JWE's text", () => {
  // docs/decisions.md: a value that reads as a JWE is opened or refused, never stored as it is. A
  // client encrypting an update or an intent would otherwise store ciphertext as the token's data.
  it("PATCH /tokens/{id} refuses a JWE as data, leaving the token as it was", async () => {
    const created = await call("POST", "/tokens", { key: tenant.key, body: { type: "token", data: "before" } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, "after");
    const patched = await call("PATCH", `/tokens/${created.body.id}`, {
      key: tenant.key,
      body: { data: jwe },
      contentType: "application/merge-patch+json",
    });
    const problem = expectProblem(patched, 400);
    expect(problem.errors).toHaveProperty(["data"]);
    expect((await call("GET", `/tokens/${created.body.id}`, { key: tenant.key })).body.data).toBe("before");
  });

  it("POST /token-intents refuses a JWE as data", async () => {
    const intents = await seedIntentTenant();
    const key = await call("POST", "/keys", { key: intents.managementKey, body: {} });
    const jwe = await encryptJwe(key.body.public_key_pem, key.body.id, "secret");
    const problem = expectProblem(
      await call("POST", "/token-intents", { key: intents.browserKey, body: { type: "token", data: jwe } }),
      400,
    );
    expect(problem.errors).toHaveProperty(["data"]);
  });
});
