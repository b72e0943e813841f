import { expect } from "vitest";
import { call } from "../support/harness";
import { GALA_PKCS12_BASE64 } from "./apple-pay-vector";

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
