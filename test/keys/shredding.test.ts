import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { processingKeyContext } from "../../src/apple-pay/service";
import { privateKeyContext } from "../../src/client-keys/service";
import { fromBase64 } from "../../src/crypto/encoding";
import { Keyring } from "../../src/crypto/keyring";
import { DataKeys, derivedMaterial, TenantKeys } from "../../src/crypto/tenant-keys";
import { configOf } from "../../src/env";
import { merchantKeyContext } from "../../src/google-pay/service";
import { keysOfTenant } from "../support/context";
import { runCron } from "../support/cron";
import { registerGooglePayMerchant } from "../support/google-pay-merchants";
import { call, expectProblem } from "../support/harness";
import { createProxy } from "../support/proxies";
import { createToken, SSN, seedTokenTenant, VISA } from "../support/tokens";
import { createApplePayToken, registerApplePayCertificates } from "../wallets/apple-pay-merchant";

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

/** Every data key the vault holds: each record of tenant_keys unwrapped, and what each keyring version would derive for `tenantId`. */
async function everyKeyTheVaultHolds(tenantId: string): Promise<DataKeys[]> {
  const { keyring: entries } = configOf(env);
  const keyring = Keyring.of(entries);
  const { results } = await env.DB.prepare("SELECT tenant_id, version, wrapped FROM tenant_keys").all<{
    tenant_id: string;
    version: number;
    wrapped: string;
  }>();
  const held = await Promise.all(
    results.map(async (row) => DataKeys.import(row.version, await keyring.unwrap(row.wrapped, row.tenant_id, row.version))),
  );
  const derived = await Promise.all(entries.map(async ({ key }) => DataKeys.import(1, await derivedMaterial(fromBase64(key), tenantId))));
  return [...held, ...derived];
}

async function storedCiphertexts(tenantId: string): Promise<{ id: string; ciphertext: string }[]> {
  const { results } = await env.DB_1.prepare("SELECT id, ciphertext FROM tokens WHERE tenant_id = ?")
    .bind(tenantId)
    .all<{ id: string; ciphertext: string }>();
  const more = await env.DB_2.prepare("SELECT id, ciphertext FROM tokens WHERE tenant_id = ?")
    .bind(tenantId)
    .all<{ id: string; ciphertext: string }>();
  return [...results, ...more.results];
}

describe("crypto-shredding a tenant", () => {
  it("destroys its keys at once, so no key the vault holds opens its data; the cron then purges its rows; others are untouched", async () => {
    const doomed = await seedTokenTenant();
    const other = await seedTokenTenant();
    for (const data of [SSN, "123-45-6789"]) await createToken(doomed.key, { type: "social_security_number", data });
    await createProxy(doomed, { require_auth: false, configuration: { SECRET: "partner-secret" } });
    const clientKey = await call("POST", "/keys", { key: doomed.managementKey, body: {} });
    expect(clientKey.status, JSON.stringify(clientKey.body)).toBe(201);
    const sealedPrivateKey = await env.DB.prepare("SELECT private_key_ciphertext AS sealed FROM client_encryption_keys WHERE id = ?")
      .bind(clientKey.body.id)
      .first<{ sealed: string }>();
    const googlePay = await registerGooglePayMerchant(doomed.managementKey, "doomed-merchant");
    const sealedMerchantKey = await env.DB.prepare("SELECT private_key_ciphertext AS sealed FROM google_pay_merchant_keys WHERE id = ?")
      .bind(googlePay.keyId)
      .first<{ sealed: string }>();
    const applePayCertificates = await registerApplePayCertificates(doomed.managementKey);
    const sealedProcessingKey = await env.DB.prepare("SELECT private_key_ciphertext AS sealed FROM apple_pay_certificates WHERE id = ?")
      .bind(applePayCertificates.id)
      .first<{ sealed: string }>();
    await createApplePayToken(doomed);
    const applePayDomain = await call("POST", "/apple-pay/domain-registration", {
      key: doomed.managementKey,
      body: { domain: `shop.t${doomed.tenantId.slice(0, 8)}.example.com` },
    });
    expect(applePayDomain.status, JSON.stringify(applePayDomain.body)).toBe(200);
    const kept = await createToken(other.key, { type: "card_number", data: VISA });
    const ciphertexts = await storedCiphertexts(doomed.tenantId);
    expect(ciphertexts).toHaveLength(2);
    // The tenant's own keys open them before.
    const before = await keysOfTenant(doomed.tenantId);
    expect(await before.decrypt(ciphertexts[0]!.ciphertext, ciphertexts[0]!.id)).toContain("-");

    const shredded = await call("DELETE", `/tenants/${doomed.tenantId}`, { headers: operator });
    expect(shredded.status, JSON.stringify(shredded.body)).toBe(200);
    expect(shredded.body).toMatchObject({ tenant_id: doomed.tenantId, derived_keys: false });
    expect(shredded.body.remaining_rows).toBeGreaterThanOrEqual(2);

    // Nothing the vault holds opens what the tenant stored.
    for (const keys of await everyKeyTheVaultHolds(doomed.tenantId)) {
      const candidate = new TenantKeys(doomed.tenantId, [keys]);
      for (const { id, ciphertext } of ciphertexts) {
        await expect(candidate.decrypt(ciphertext.replace(/^v\d+\./, `v${keys.version}.`), id)).rejects.toThrow();
      }
      const privateKey = sealedPrivateKey!.sealed.replace(/^v\d+\./, `v${keys.version}.`);
      await expect(candidate.decrypt(privateKey, privateKeyContext(clientKey.body.id))).rejects.toThrow();
      const merchantKey = sealedMerchantKey!.sealed.replace(/^v\d+\./, `v${keys.version}.`);
      await expect(candidate.decrypt(merchantKey, merchantKeyContext(googlePay.keyId))).rejects.toThrow();
      const processingKey = sealedProcessingKey!.sealed.replace(/^v\d+\./, `v${keys.version}.`);
      await expect(candidate.decrypt(processingKey, processingKeyContext(applePayCertificates.id))).rejects.toThrow();
    }
    // The Apple Pay merchants, certificates, tokens and domains go with the keys, in the same batch.
    for (const table of ["apple_pay_merchants", "apple_pay_certificates", "apple_pay_tokens", "apple_pay_domains"]) {
      expect(await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(doomed.tenantId).first()).toEqual({
        n: 0,
      });
    }
    // The client key's row goes with the keys, in the same batch.
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM client_encryption_keys WHERE tenant_id = ?").bind(doomed.tenantId).first(),
    ).toEqual({
      n: 0,
    });
    // So do its Google Pay merchant registrations and their keys.
    for (const table of ["google_pay_merchants", "google_pay_merchant_keys"]) {
      expect(await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(doomed.tenantId).first(), table).toEqual({
        n: 0,
      });
    }
    await expect(keysOfTenant(doomed.tenantId)).rejects.toThrow(/not found/);
    expectProblem(await call("GET", "/tokens", { key: doomed.key }), 401);
    expectProblem(await call("GET", "/applications", { key: doomed.managementKey }), 401);

    // The purge: its rows go, then the tenant itself; a second delete is a 404.
    await runCron();
    expect(await storedCiphertexts(doomed.tenantId)).toEqual([]);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM tenants WHERE id = ?").bind(doomed.tenantId).first()).toEqual({ n: 0 });
    expectProblem(await call("DELETE", `/tenants/${doomed.tenantId}`, { headers: operator }), 404);

    expect((await call("GET", `/tokens/${kept.id}`, { key: other.key })).body.data).toBe(VISA);
  });

  it("is for operators only, and a tenant being moved must finish its move first", async () => {
    const tenant = await seedTokenTenant();
    expectProblem(await call("DELETE", `/tenants/${tenant.tenantId}`, { key: tenant.managementKey }), 401);
    expectProblem(await call("DELETE", `/tenants/${crypto.randomUUID()}`, { headers: operator }), 404);
    await env.DB.prepare(
      "INSERT INTO tenant_moves (tenant_id, source, target, phase, cursor, copy_started_at, phase_started_at) VALUES (?, 'DB_1', 'DB_2', 'copying', '', 0, 0)",
    )
      .bind(tenant.tenantId)
      .run();
    expectProblem(await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator }), 409);
    await env.DB.prepare("DELETE FROM tenant_moves WHERE tenant_id = ?").bind(tenant.tenantId).run();
    expect((await call("GET", "/tokens", { key: tenant.key })).status).toBe(200);
  });
});
