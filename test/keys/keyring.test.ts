import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { credentialsChanged } from "../../src/auth/lookup-cache";
import { fromBase64, fromBase64Url, fromUtf8, utf8 } from "../../src/crypto/encoding";
import { verifyLog } from "../support/audit";
import { callConfigured } from "../support/configured";
import { dataDatabaseOf } from "../support/context";
import { call, dumpDatabase } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createToken, REVEAL_EVERYTHING, SSN, seedTokenTenant } from "../support/tokens";

/*
 * Envelope encryption (src/keys, src/crypto/keyring.ts). The test pool's keyring is "2:…,1:…";
 * an older deployment is the same worker handed "1:…" alone, a deployment that dropped version 1
 * is handed "2:…" alone.
 */

const [V2, V1] = env.VAULT_MASTER_KEYS.split(",").map((entry) => entry.split(":")[1]) as [string, string];
const OLD_DEPLOYMENT = { VAULT_MASTER_KEYS: `1:${V1}` };
const WITHOUT_V1 = { VAULT_MASTER_KEYS: `2:${V2}` };
const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

async function keyRecords(tenantId: string) {
  const { results } = await env.DB.prepare("SELECT version, kek_version, wrapped FROM tenant_keys WHERE tenant_id = ?")
    .bind(tenantId)
    .all<{ version: number; kek_version: number; wrapped: string }>();
  return results;
}

/** The encryption key the vault derived for a tenant before envelope encryption, computed as that code did. */
async function formerlyDerivedKey(tenantId: string): Promise<CryptoKey> {
  const master = await crypto.subtle.importKey("raw", fromBase64(V1), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: utf8.encode("token-vault/v1"), info: utf8.encode(`encryption/${tenantId}`) },
    master,
    { name: "AES-GCM", length: 256 },
    false,
    ["decrypt"],
  );
}

async function openWith(key: CryptoKey, tenantId: string, tokenId: string): Promise<unknown> {
  const row = await (await dataDatabaseOf(tenantId))
    .prepare("SELECT ciphertext FROM tokens WHERE id = ?")
    .bind(tokenId)
    .first<{ ciphertext: string }>();
  const [, iv, sealed] = row!.ciphertext.split(".");
  const opened = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64Url(iv!), additionalData: utf8.encode(`${tenantId}/${tokenId}`) },
    key,
    fromBase64Url(sealed!),
  );
  return JSON.parse(fromUtf8.decode(opened));
}

/** A tenant as one created before envelope encryption: no stored keys, version 1 derived from the keyring. */
async function predatingEnvelopes(tenantId: string): Promise<void> {
  await env.DB.batch([
    env.DB.prepare("DELETE FROM tenant_keys WHERE tenant_id = ?").bind(tenantId),
    env.DB.prepare("UPDATE tenants SET keys_derived = 1 WHERE id = ?").bind(tenantId),
  ]);
  credentialsChanged();
}

async function rewrapUntilDone(bindings: Record<string, unknown> = {}) {
  for (let call = 0; call < 20; call++) {
    const reply = await callConfigured(bindings, "POST", "/operator/keys/rewrap?max_records=50", { headers: operator });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    if (reply.body.remaining === 0) return reply.body;
  }
  throw new Error("the rewrap did not finish");
}

describe("envelope encryption", () => {
  it("gives each tenant random data keys, stored only wrapped by the newest key-encryption key", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    expect(await keyRecords(tenant.tenantId)).toEqual([{ version: 1, kek_version: 2, wrapped: expect.stringMatching(/^k2\./) }]);
    const row = await (await dataDatabaseOf(tenant.tenantId)).prepare("SELECT key_version FROM tokens WHERE id = ?").bind(token.id).first();
    expect(row).toEqual({ key_version: 1 });
    // Random, not derived: the key the vault used to derive does not open the token.
    await expect(openWith(await formerlyDerivedKey(tenant.tenantId), tenant.tenantId, token.id)).rejects.toThrow();
    expect(await dumpDatabase()).not.toContain(SSN);
  });

  it("a tenant that predates it keeps its data: its derived keys are stored wrapped on first use, byte for byte", async () => {
    const tenant = await seedTokenTenant();
    await predatingEnvelopes(tenant.tenantId);
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    // What the former code derived opens what the vault now writes with the stored keys: data it wrote reads the same way.
    expect(await openWith(await formerlyDerivedKey(tenant.tenantId), tenant.tenantId, token.id)).toBe(SSN);
    expect(await keyRecords(tenant.tenantId)).toEqual([{ version: 1, kek_version: 2, wrapped: expect.stringMatching(/^k2\./) }]);
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.data).toBe(SSN);
  });

  it("data written under version 1 reads under the keyring 2,1, after the rewrap, and once version 1 is gone", async () => {
    // An older deployment, whose keyring is version 1 alone: a tenant and a token.
    const created = await callConfigured(OLD_DEPLOYMENT, "POST", "/tenants", { headers: operator, body: { name: "old" } });
    expect(created.status).toBe(201);
    const management = { "SVC-API-KEY": created.body.application.key };
    const app = await callConfigured(OLD_DEPLOYMENT, "POST", "/applications", {
      headers: management,
      body: { name: "app", ...REVEAL_EVERYTHING },
    });
    const key = app.body.key as string;
    const written = await callConfigured(OLD_DEPLOYMENT, "POST", "/tokens", {
      headers: { "SVC-API-KEY": key },
      body: { type: "social_security_number", data: SSN, search_indexes: ["{{ data }}"] },
    });
    expect(written.status).toBe(201);
    const tenantId = created.body.tenant.id as string;
    // And a tenant that predates envelope encryption altogether.
    const predating = await seedTokenTenant();
    await predatingEnvelopes(predating.tenantId);
    const predatingToken = await createToken(predating.key, { type: "social_security_number", data: SSN });
    await predatingEnvelopes(predating.tenantId);
    expect(await keyRecords(tenantId)).toEqual([expect.objectContaining({ kek_version: 1 })]);

    // Keyring 2,1: everything reads; the status names what is left to rewrap.
    expect((await call("GET", `/tokens/${written.body.id}`, { key })).body.data).toBe(SSN);
    const before = await call("GET", "/operator/keys", { headers: operator });
    expect(before.body).toMatchObject({ keyring_versions: [2, 1] });
    expect(before.body.remaining).toBeGreaterThanOrEqual(2);

    const done = await rewrapUntilDone();
    expect(done).toMatchObject({ kek_version: 2, remaining: 0, tenants_with_derived_keys: 0 });
    expect(done.records_by_kek_version["1"]).toBeUndefined();
    expect(await keyRecords(tenantId)).toEqual([expect.objectContaining({ kek_version: 2 })]);

    // Version 1 removed: reads, searches, writes and the audit chain all hold.
    const read = await callConfigured(WITHOUT_V1, "GET", `/tokens/${written.body.id}`, { headers: { "SVC-API-KEY": key } });
    expect(read.body.data).toBe(SSN);
    const predatingRead = await callConfigured(WITHOUT_V1, "GET", `/tokens/${predatingToken.id}`, {
      headers: { "SVC-API-KEY": predating.key },
    });
    expect(predatingRead.body.data).toBe(SSN);
    const found = await callConfigured(WITHOUT_V1, "POST", "/tokens/search", {
      headers: { "SVC-API-KEY": key },
      body: { query: `data:${SSN}` },
    });
    expect(found.body.data.map((token: { id: string }) => token.id)).toEqual([written.body.id]);
    const another = await callConfigured(WITHOUT_V1, "POST", "/tokens", {
      headers: { "SVC-API-KEY": key },
      body: { type: "token", data: "x" },
    });
    expect(another.status).toBe(201);
    const owner = { tenantId, managementKey: created.body.application.key, managementApplicationId: created.body.application.id };
    expect((await verifyLog(owner)).verified).toBe(true);
  });

  it("a keyring that lacks the version wrapping a tenant's keys is a clear configuration error", async () => {
    const tenant = await seedTokenTenant();
    credentialsChanged();
    const reply = await expectLoggedError(/Version 2 of the keyring/, () =>
      callConfigured(OLD_DEPLOYMENT, "GET", "/tokens", { headers: { "SVC-API-KEY": tenant.key } }),
    );
    expect(reply.status).toBe(500);
    expect(reply.body.detail).toMatch(/Version 2 of the keyring wraps .* not in VAULT_MASTER_KEYS/);
  });

  it("refuses a malformed keyring", async () => {
    for (const keyring of ["x:abc", `1:${V1},1:${V2}`, "2:c2hvcnQ="]) {
      const reply = await expectLoggedError(/VAULT_MASTER_KEYS/, () => callConfigured({ VAULT_MASTER_KEYS: keyring }, "GET", "/health"));
      expect(reply.status, keyring).toBe(500);
      expect(reply.body.detail).toContain("VAULT_MASTER_KEYS");
    }
  });
});
