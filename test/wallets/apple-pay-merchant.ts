import { expect, vi } from "vitest";
import { signingClock } from "../../src/apple-pay/ec-v1";
import { call, createApplication, type Tenant } from "../support/harness";
import { GALA_PKCS12_BASE64, GALA_SIGNED_AT, GALA_TOKEN } from "./apple-pay-vector";

/** A merchant registration of the management key's tenant, holding gala's payment processing certificate: its certificates' facts. */
export async function registerApplePayCertificates(managementKey: string) {
  const merchant = await call("POST", "/apple-pay/merchant-registration", { key: managementKey, body: {} });
  expect(merchant.status, JSON.stringify(merchant.body)).toBe(201);
  const certificates = await call("POST", `/apple-pay/merchant-registration/${merchant.body.id}/certificates`, {
    key: managementKey,
    body: { payment_processor_certificate_data: GALA_PKCS12_BASE64, payment_processor_certificate_password: "s3cret" },
  });
  expect(certificates.status, JSON.stringify(certificates.body)).toBe(201);
  return certificates.body;
}

/**
 * Gala's token decrypted by a private key of a tenant that registered gala's certificate, which
 * holds `permissions` beside apple-pay:create: the Apple Pay token and that key. The token was
 * signed in 2021, so the signing-time window is read near then (test/wallets/apple-pay.test.ts).
 */
export async function createApplePayToken(tenant: Tenant, permissions: string[] = []) {
  const creator = await createApplication(tenant, { type: "private", permissions: ["apple-pay:create", ...permissions] });
  const clock = vi.spyOn(signingClock, "now").mockReturnValue(GALA_SIGNED_AT + 60_000);
  try {
    const reply = await call("POST", "/apple-pay", {
      key: creator.key,
      body: { apple_payment_data: { paymentData: GALA_TOKEN }, expires_at: "2099-01-01T00:00:00Z" },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    return { token: reply.body.apple_pay as { id: string }, key: creator.key };
  } finally {
    clock.mockRestore();
  }
}
