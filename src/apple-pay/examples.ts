import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";
import type { ApplePayBody, CertificatesBody, MerchantRegistrationBody } from "./schema";

/*
 * Examples of the Apple Pay routes (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

export const MERCHANT_REQUEST_EXAMPLE = { merchant_identifier: "merchant.com.example" } satisfies z.input<typeof MerchantRegistrationBody>;

export const MERCHANT_EXAMPLE = {
  id: EXAMPLE_IDS.applePayMerchant,
  tenant_id: EXAMPLE_IDS.tenant,
  merchant_identifier: "merchant.com.example",
  created_by: EXAMPLE_IDS.managementApplication,
  created_at: EXAMPLE_TIME,
};

export const CERTIFICATES_REQUEST_EXAMPLE = {
  payment_processor_certificate_data: "MIIJqQIBAzCCCW8GCSqGSIb3DQEHAaCCCWAEgglcMIIJWDCCA88GCSqGSIb3DQEHBqCCA8A=",
  payment_processor_certificate_password: "the file's password",
  domain: "shop.example.com",
} satisfies z.input<typeof CertificatesBody>;

export const CERTIFICATES_EXAMPLE = {
  id: EXAMPLE_IDS.applePayCertificates,
  tenant_id: EXAMPLE_IDS.tenant,
  merchant_registration_id: EXAMPLE_IDS.applePayMerchant,
  domain: "shop.example.com",
  payment_processor_certificate_expiration_date: "2028-11-22T12:00:00.000Z",
  payment_processor_certificate_fingerprint: "57b44f751d2acdd7fe81e498fec1ccd6769d55391793c072594bed196f4dad84",
  created_by: EXAMPLE_IDS.managementApplication,
  created_at: EXAMPLE_TIME,
};

export const APPLE_PAY_REQUEST_EXAMPLE = {
  apple_payment_data: {
    paymentData: {
      version: "EC_v1",
      data: "98K9zY2CVmVzD/9A9mq7EtYOLda1LUWn1bDZM8Cy/ABPBok2B630eG9eZJUrlMYw",
      signature: "MIAGCSqGSIb3DQEHAqCAMIACAQExDzANBglghkgBZQMEAgEFADCABgkqhkiG9w0BBwEAAKCAMIID4zCCA4igAwIBAgII",
      header: {
        ephemeralPublicKey:
          "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEHqqqjg3xlLn9YH2fEN1Gq3Z0IUJY1KZrX9/ZSzzYnFu3EDP4PGdPBpp6gzlHIb9vr9Tbz1HuMixBCfVMWhAvmw==",
        publicKeyHash: "+9VwJrqieiPF2ZRB0xHFYhgQ6RYza5hfrVLpdB1KtKI=",
        transactionId: "f7f133694685bab2f44ae3a7b54e2c0d0d39a3bc73fa2e6b14a2baf628d6ce87",
      },
    },
    paymentMethod: { displayName: "MasterCard 1169", network: "MasterCard", type: "credit" },
    transactionIdentifier: "F7F133694685BAB2F44AE3A7B54E2C0D0D39A3BC73FA2E6B14A2BAF628D6CE87",
  },
} satisfies z.input<typeof ApplePayBody>;

const APPLE_PAY_TOKEN_FACTS = {
  id: EXAMPLE_IDS.applePayToken,
  type: "dpan" as const,
  tenant_id: EXAMPLE_IDS.tenant,
  status: "active" as const,
  expires_at: "2028-10-01T00:00:00.000Z",
  created_by: EXAMPLE_IDS.application,
  created_at: EXAMPLE_TIME,
  transaction_id: "f7f133694685bab2f44ae3a7b54e2c0d0d39a3bc73fa2e6b14a2baf628d6ce87",
  payment_data_type: "3DSecure",
  device_manufacturer_identifier: "050110030273",
};

export const APPLE_PAY_CREATED_EXAMPLE = {
  apple_pay: { ...APPLE_PAY_TOKEN_FACTS, card: { last4: "1169", expiration_month: 9, expiration_year: 2028, brand: "mastercard" } },
};

export const APPLE_PAY_TOKEN_EXAMPLE = {
  ...APPLE_PAY_TOKEN_FACTS,
  card: { bin: "53537563", last4: "1169", expiration_month: 9, expiration_year: 2028, brand: "mastercard" },
  data: { number: "5353756319181169", expiration_month: 9, expiration_year: 2028 },
  authentication: { threeds_cryptogram: "AMwBRjPWDnAgAA7Rls7mAoABFA==" },
};
