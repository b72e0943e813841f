import { expect } from "vitest";
import { MERCHANT_PRIVATE_KEY_PKCS8_BASE64 } from "../wallets/tink-ecv2-vectors";
import { call } from "./harness";

/** A Google Pay merchant registration of the tenant with Tink's merchant key; returns the registration's and the key's ids. */
export async function registerGooglePayMerchant(
  managementKey: string,
  merchantIdentifier: string,
): Promise<{ merchantId: string; keyId: string }> {
  const merchant = await call("POST", "/google-pay/merchant-registration", {
    key: managementKey,
    body: { merchant_identifier: merchantIdentifier },
  });
  expect(merchant.status, merchant.text).toBe(201);
  const key = await call("POST", `/google-pay/merchant-registration/${merchant.body.id}/certificates`, {
    key: managementKey,
    body: { merchant_certificate_data: MERCHANT_PRIVATE_KEY_PKCS8_BASE64 },
  });
  expect(key.status, key.text).toBe(201);
  return { merchantId: merchant.body.id, keyId: key.body.id };
}
