import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { credentialsChanged } from "../../src/auth/lookup-cache";
import { Keyring } from "../../src/crypto/keyring";
import { auditKeyOf, newMaterial } from "../../src/crypto/tenant-keys";
import { configOf } from "../../src/env";
import { verifyLog } from "../support/audit";
import { dataDatabaseOf } from "../support/context";
import { call } from "../support/harness";
import { createToken, SSN, seedTokenTenant } from "../support/tokens";

/**
 * A tenant holding two data-key versions, as during a rotation: the newer writes, both read, and
 * `data:` search and deduplication compare the value under both. Version 2 is added by hand here, so
 * the job that re-encrypts (test/keys/rotation.test.ts) cannot hide a gap in the read side.
 */
async function addKeyVersion(tenantId: string): Promise<void> {
  const keyring = Keyring.of(configOf(env).keyring);
  const first = await env.DB.prepare("SELECT wrapped FROM tenant_keys WHERE tenant_id = ? AND version = 1")
    .bind(tenantId)
    .first<{ wrapped: string }>();
  const material = newMaterial(auditKeyOf(await keyring.unwrap(first!.wrapped, tenantId, 1)));
  const { kekVersion, wrapped } = await keyring.wrap(material, tenantId, 2);
  await env.DB.prepare("INSERT INTO tenant_keys (tenant_id, version, kek_version, wrapped, created_at) VALUES (?, 2, ?, ?, ?)")
    .bind(tenantId, kekVersion, wrapped, Date.now())
    .run();
  credentialsChanged();
  // Isolates that cached the records see the new version within one credential time to live.
  await new Promise((resolve) => setTimeout(resolve, configOf(env).CREDENTIAL_CACHE_TTL_MS + 100));
}

describe("a tenant holding two data-key versions", () => {
  it("writes with the newer, reads both, finds both with data: search, deduplicates across them, and keeps its audit chain", async () => {
    const tenant = await seedTokenTenant();
    const body = { type: "social_security_number", data: SSN, search_indexes: ["{{ data }}"] };
    const older = await createToken(tenant.key, body);
    await addKeyVersion(tenant.tenantId);
    const newer = await createToken(tenant.key, body);

    const d1 = await dataDatabaseOf(tenant.tenantId);
    const { results } = await d1
      .prepare("SELECT id, key_version, substr(ciphertext, 1, 3) AS prefix FROM tokens WHERE tenant_id = ? ORDER BY key_version")
      .bind(tenant.tenantId)
      .all();
    expect(results).toEqual([
      { id: older.id, key_version: 1, prefix: "v1." },
      { id: newer.id, key_version: 2, prefix: "v2." },
    ]);
    for (const token of [older, newer]) expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.data).toBe(SSN);

    const found = await call("POST", "/tokens/search", { key: tenant.key, body: { query: `data:${SSN}` } });
    expect(found.body.data.map((token: { id: string }) => token.id).sort()).toEqual([older.id, newer.id].sort());
    // Deduplication matches the token written under version 1 (its fingerprint is version 1's).
    const again = await call("POST", "/tokens", { key: tenant.key, body: { ...body, deduplicate_token: true } });
    expect(again.body.id).toBe(older.id);
    expect((await verifyLog(tenant)).verified).toBe(true);
  });
});
