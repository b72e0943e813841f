import { beforeAll, describe, expect, it } from "vitest";
import { dataDatabaseOf } from "../support/context";
import { call, expectProblem } from "../support/harness";
import { encryptJwe } from "../support/jwe";
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
