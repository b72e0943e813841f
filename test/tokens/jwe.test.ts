import { beforeAll, describe, expect, it } from "vitest";
import { dataDatabaseOf } from "../support/context";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { encryptJwe, tamper } from "../support/jwe";
import { seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/*
 * Data encrypted on the client to one of the tenant's client encryption keys (a JWE, made here by the
 * test's own WebCrypto builder, not by the vault's library) is accepted where plain data is:
 * POST /tokens and POST /tokenize. It is decrypted in the vault and checked as plain data is; a JWE
 * the vault cannot open is a 400, and nothing is stored.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099 };
const UNUSABLE = "is a JWE to no client encryption key of this tenant that is live (unknown, deleted or expired)";

let tenant: TokenTenant;
let clientKey: { id: string; public_key_pem: string };

async function newClientKey(key: string, body: unknown = {}): Promise<{ id: string; public_key_pem: string }> {
  const reply = await call("POST", "/keys", { key, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

async function tokenCount(tenantId: string): Promise<number> {
  const db = await dataDatabaseOf(tenantId);
  return (await db.prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>())!.n;
}

/** The call must be a 400 naming `field`, with no token stored. */
async function expectRefused(body: unknown, field: string, message?: string, path = "/tokens") {
  const before = await tokenCount(tenant.tenantId);
  const problem = expectProblem(await call("POST", path, { key: tenant.key, body }), 400);
  expect(problem.errors, JSON.stringify(problem)).toHaveProperty([field]);
  if (message) expect(problem.errors![field]).toEqual([message]);
  expect(await tokenCount(tenant.tenantId)).toBe(before);
  return problem;
}

beforeAll(async () => {
  tenant = await seedTokenTenant();
  clientKey = await newClientKey(tenant.managementKey);
});

describe("JWE data: POST /tokens and POST /tokenize", () => {
  it("creates a card token from a JWE of its data, which reads back decrypted", async () => {
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    const created = await call("POST", "/tokens", { key: tenant.key, body: { type: "card", data: jwe } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const read = await call("GET", `/tokens/${created.body.id}`, { key: tenant.key });
    expect(read.body.data).toEqual(CARD);
  });

  it("tokenizes JWEs, as a create request's data and as a leaf", async () => {
    const card = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    const name = await encryptJwe(clientKey.public_key_pem, clientKey.id, "Jane Doe");
    const reply = await call("POST", "/tokenize", { key: tenant.key, body: { card: { type: "card", data: card }, name } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const readName = await call("GET", `/tokens/${reply.body.name}`, { key: tenant.key });
    expect(readName.body.data).toBe("Jane Doe");
    const readCard = await call("GET", `/tokens/${reply.body.card.id}`, { key: tenant.key });
    expect(readCard.body.data).toEqual(CARD);
  });

  it("checks the decrypted data as it checks plain data", async () => {
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify({ ...CARD, number: "4242424242424241" }));
    await expectRefused({ type: "card", data: jwe }, "data.number");
  });

  it("refuses a JWE whose plaintext is another JWE", async () => {
    const inner = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    const outer = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(inner));
    await expectRefused({ type: "card", data: outer }, "data", "is a JWE whose plaintext is another JWE");
  });

  it("answers the created data as a read would, not as data the caller sent: a create-only key sees none of it", async () => {
    const creator = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create"] }],
    });
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    const created = await call("POST", "/tokens", { key: creator.key, body: { type: "card", data: jwe } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).not.toHaveProperty("data");
    expect(created.text).not.toContain(VISA);
    const plain = await call("POST", "/tokens", { key: creator.key, body: { type: "card", data: CARD } });
    expect(plain.body.data).toEqual(CARD);
  });

  it("refuses a JWE to a deleted key, with nothing stored", async () => {
    const doomed = await newClientKey(tenant.managementKey);
    const jwe = await encryptJwe(doomed.public_key_pem, doomed.id, JSON.stringify(CARD));
    expect((await call("DELETE", `/keys/${doomed.id}`, { key: tenant.managementKey })).status).toBe(204);
    await expectRefused({ type: "card", data: jwe }, "data", UNUSABLE);
  });

  it("refuses a JWE to an expired key, with nothing stored", async () => {
    const expiresAt = Date.now() + 1_500;
    const shortLived = await newClientKey(tenant.managementKey, { expires_at: new Date(expiresAt).toISOString() });
    const jwe = await encryptJwe(shortLived.public_key_pem, shortLived.id, JSON.stringify(CARD));
    while (Date.now() <= expiresAt) await new Promise((resolve) => setTimeout(resolve, 100));
    await expectRefused({ type: "card", data: jwe }, "data", UNUSABLE);
  });

  it("refuses a JWE to another tenant's key, in the words it uses for an unknown one", async () => {
    const other = await seedTenant();
    const theirs = await newClientKey(other.managementKey);
    const jwe = await encryptJwe(theirs.public_key_pem, theirs.id, JSON.stringify(CARD));
    await expectRefused({ type: "card", data: jwe }, "data", UNUSABLE);
    const unknown = await encryptJwe(clientKey.public_key_pem, crypto.randomUUID(), JSON.stringify(CARD));
    await expectRefused({ type: "card", data: unknown }, "data", UNUSABLE);
    // Naming this tenant's key does not help: the JWE was made to the other key.
    const misnamed = await encryptJwe(theirs.public_key_pem, clientKey.id, JSON.stringify(CARD));
    await expectRefused({ type: "card", data: misnamed }, "data", "is a JWE that does not decrypt with the client encryption key it names");
  });

  it("refuses a JWE with a changed header, IV, ciphertext or tag, with nothing stored", async () => {
    const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD));
    for (const part of [2, 3, 4]) {
      await expectRefused(
        { type: "card", data: tamper(jwe, part) },
        "data",
        "is a JWE that does not decrypt with the client encryption key it names",
      );
    }
    // The header is authenticated: a member added to it changes the additional data.
    const [header, ...rest] = jwe.split(".");
    const members = JSON.parse(atob(header!.replaceAll("-", "+").replaceAll("_", "/")));
    const changed = btoa(JSON.stringify({ ...members, cty: "json" }))
      .replaceAll("+", "-")
      .replaceAll("/", "_")
      .replace(/=+$/, "");
    await expectRefused({ type: "card", data: [changed, ...rest].join(".") }, "data");
  });

  it("refuses algorithms other than ECDH-ES with A256GCM, compression, and a JWE naming no key", async () => {
    for (const header of [
      { alg: "ECDH-ES+A256KW" },
      { enc: "A128GCM" },
      { alg: "dir" },
      { zip: "DEF" },
      { alg: "PBES2-HS512+A256KW", p2c: 1e9 },
    ]) {
      const jwe = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD), header);
      await expectRefused({ type: "card", data: jwe }, "data");
    }
    const anonymous = await encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(CARD), { kid: undefined });
    await expectRefused(
      { type: "card", data: anonymous },
      "data",
      "is a JWE without a `kid` naming the client encryption key it was encrypted to",
    );
  });

  it("refuses every JWE of a tokenize when one cannot be opened, storing nothing", async () => {
    const good = await encryptJwe(clientKey.public_key_pem, clientKey.id, "fine");
    const bad = tamper(await encryptJwe(clientKey.public_key_pem, clientKey.id, "broken"), 4);
    await expectRefused({ a: good, b: bad }, "$.b.data", undefined, "/tokenize");
  });

  it("stores a string that only looks like a JWE as it is", async () => {
    const notJwe = "aaaa.bbbb.cccc.dddd.eeee";
    const created = await call("POST", "/tokens", { key: tenant.key, body: { type: "token", data: notJwe } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await call("GET", `/tokens/${created.body.id}`, { key: tenant.key })).body.data).toBe(notJwe);
  });
});
