import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { privateKeyContext } from "../../src/client-keys/service";
import { keysOfTenant } from "../support/context";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { base64Url, rawPublicKeyOf } from "../support/jwe";

const YEAR_MS = 365 * 24 * 60 * 60 * 1000;

async function createKey(key: string, body: unknown = {}) {
  const reply = await call("POST", "/keys", { key, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

describe("client encryption keys: POST, GET and DELETE /keys", () => {
  it("answers the public key on creation only: a 32-byte X25519 key between PEM markers", async () => {
    const tenant = await seedTenant();
    const created = await createKey(tenant.managementKey, { expires_at: new Date(Date.now() + 86_400_000).toISOString() });
    expect(created.id).toBe(created.key_id);
    expect(created.public_key_pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/]{43}=\n-----END PUBLIC KEY-----$/);
    expect(rawPublicKeyOf(created.public_key_pem)).toHaveLength(32);

    const read = await call("GET", `/keys/${created.id}`, { key: tenant.managementKey });
    expect(read.body).toEqual({ id: created.id, key_id: created.id, expires_at: created.expires_at, created_at: created.created_at });
    const listed = await call("GET", "/keys", { key: tenant.managementKey });
    expect(listed.body).toEqual([read.body]);
    expect(`${read.text}${listed.text}`).not.toContain(created.public_key_pem.split("\n")[1]);
  });

  it("expires a year ahead when no expiry is given, and refuses one further or past", async () => {
    const tenant = await seedTenant();
    const before = Date.now();
    const created = await createKey(tenant.managementKey);
    expect(Date.parse(created.expires_at)).toBeGreaterThanOrEqual(before + YEAR_MS);
    expect(Date.parse(created.expires_at)).toBeLessThanOrEqual(Date.now() + YEAR_MS);

    const tooFar = await call("POST", "/keys", {
      key: tenant.managementKey,
      body: { expires_at: new Date(Date.now() + YEAR_MS + 86_400_000).toISOString() },
    });
    expect(expectProblem(tooFar, 400).errors).toEqual({ expires_at: ["must be at most one year ahead"] });
    const past = await call("POST", "/keys", { key: tenant.managementKey, body: { expires_at: "2020-01-01T00:00:00Z" } });
    expect(expectProblem(past, 400).errors).toEqual({ expires_at: ["must be in the future"] });
    const notADate = await call("POST", "/keys", { key: tenant.managementKey, body: { expires_at: "tomorrow" } });
    expect(expectProblem(notADate, 400).errors).toHaveProperty("expires_at");
    expect((await call("GET", "/keys", { key: tenant.managementKey })).body).toHaveLength(1);
  });

  it("deletes a key: 204, then 404 to every route", async () => {
    const tenant = await seedTenant();
    const created = await createKey(tenant.managementKey);
    expect((await call("DELETE", `/keys/${created.id}`, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await call("GET", `/keys/${created.id}`, { key: tenant.managementKey }), 404);
    expectProblem(await call("DELETE", `/keys/${created.id}`, { key: tenant.managementKey }), 404);
    expect((await call("GET", "/keys", { key: tenant.managementKey })).body).toEqual([]);
  });

  it("needs keys:create, keys:read and keys:delete, which only management applications hold", async () => {
    const tenant = await seedTenant();
    const created = await createKey(tenant.managementKey);
    const reader = await createApplication(tenant, { type: "management", permissions: ["keys:read"] });
    expect((await call("GET", `/keys/${created.id}`, { key: reader.key })).status).toBe(200);
    expect(expectProblem(await call("POST", "/keys", { key: reader.key, body: {} }), 403).detail).toMatch(/keys:create/);
    expect(expectProblem(await call("DELETE", `/keys/${created.id}`, { key: reader.key }), 403).detail).toMatch(/keys:delete/);
    const refused = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "server", type: "private", permissions: ["keys:read"] },
    });
    expectProblem(refused, 400);
  });

  it("answers 404 to another tenant's key id, and leaves the key in place", async () => {
    const [owner, intruder] = await Promise.all([seedTenant(), seedTenant()]);
    const created = await createKey(owner.managementKey);
    expectProblem(await call("GET", `/keys/${created.id}`, { key: intruder.managementKey }), 404);
    expectProblem(await call("DELETE", `/keys/${created.id}`, { key: intruder.managementKey }), 404);
    expect((await call("GET", "/keys", { key: intruder.managementKey })).body).toEqual([]);
    expect((await call("GET", `/keys/${created.id}`, { key: owner.managementKey })).status).toBe(200);
  });

  it("stores the private key only sealed under the tenant's data key, never the public key", async () => {
    const tenant = await seedTenant();
    const created = await createKey(tenant.managementKey);
    const row = await env.DB.prepare("SELECT * FROM client_encryption_keys WHERE id = ?").bind(created.id).first<Record<string, unknown>>();
    expect(Object.keys(row!).sort()).toEqual(["created_at", "created_by", "expires_at", "id", "private_key_ciphertext", "tenant_id"]);
    expect(row!.private_key_ciphertext).toMatch(/^v\d+\./);
    // Opened with the tenant's keys, it is the private half of the public key answered.
    const keys = await keysOfTenant(tenant.tenantId);
    const pkcs8 = await keys.decrypt(row!.private_key_ciphertext as string, privateKeyContext(created.id));
    const imported = await crypto.subtle.importKey(
      "pkcs8",
      Uint8Array.from(atob(pkcs8), (c) => c.charCodeAt(0)),
      { name: "X25519" },
      true,
      ["deriveBits"],
    );
    const jwk = (await crypto.subtle.exportKey("jwk", imported)) as JsonWebKey;
    expect(jwk.x).toBe(base64Url(rawPublicKeyOf(created.public_key_pem)));
    // Under another key's context, the same ciphertext does not open.
    await expect(keys.decrypt(row!.private_key_ciphertext as string, privateKeyContext(crypto.randomUUID()))).rejects.toThrow();
  });

  it("refuses a tenant's 101st key with a 409", async () => {
    const tenant = await seedTenant();
    for (let i = 0; i < 100; i++) await createKey(tenant.managementKey);
    expectProblem(await call("POST", "/keys", { key: tenant.managementKey, body: {} }), 409);
  }, 30_000);
});
