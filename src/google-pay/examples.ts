import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";
import { CARD_INTENT_EXAMPLE } from "../token-intents/examples";
import type { CreateGooglePayBody, MerchantKeyBody, MerchantRegistrationBody } from "./schema";

/*
 * Examples of the Google Pay routes (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

const MERCHANT_ID = "3b9c2f6e-5d41-4a7b-9e0c-8f1a2b3c4d5e";

export const MERCHANT_REGISTRATION_REQUEST_EXAMPLE = { merchant_identifier: "12345678901234567890" } satisfies z.input<
  typeof MerchantRegistrationBody
>;

export const MERCHANT_REGISTRATION_EXAMPLE = {
  id: MERCHANT_ID,
  tenant_id: EXAMPLE_IDS.tenant,
  merchant_identifier: "12345678901234567890",
  created_by: EXAMPLE_IDS.managementApplication,
  created_at: EXAMPLE_TIME,
};

export const MERCHANT_KEY_REQUEST_EXAMPLE = {
  merchant_certificate_data: "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg…",
} satisfies z.input<typeof MerchantKeyBody>;

export const MERCHANT_KEY_EXAMPLE = {
  id: "6f0e1d2c-3b4a-4958-8776-a5b4c3d2e1f0",
  tenant_id: EXAMPLE_IDS.tenant,
  merchant_certificate_fingerprint: "9c1f3f0e2a7b5d4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f",
  created_by: EXAMPLE_IDS.managementApplication,
  created_at: EXAMPLE_TIME,
};

export const GOOGLE_PAY_REQUEST_EXAMPLE = {
  google_payment_data: {
    protocolVersion: "ECv2",
    signature: "MEQCIH6Q4OwQ0jAceFEkGF0JID6sJNXxOEi4r+mA7biRxqBQAiAondqoUpU/bdsrAOpZIsrHQS9nwiiNwOrr24RyPeHA0Q==",
    intermediateSigningKey: {
      signedKey:
        '{"keyExpiration":"1542323393147","keyValue":"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/1+3HBVSbdv+j7NaArdgMyoSAM43yRydzqdg1TxodSzA96Dj4Mc1EiKroxxunavVIvdxGnJeFViTzFvzFRxyCw=="}',
      signatures: ["MEYCIQCO2EIi48s8VTH+ilMEpoXLFfkxAwHjfPSCVED/QDSHmQIhALLJmrUlNAY8hDQRV/y1iKZGsWpeNmIP+z+tCQHQxP0v"],
    },
    signedMessage:
      '{"tag":"jpGz1F1Bcoi/fCNxI9n7Qrsw7i7KHrGtTf3NrRclt+U=","ephemeralPublicKey":"BJatyFvFPPD21l8/uLP46Ta1hsKHndf8Z+tAgk+DEPQgYTkhHy19cF3h/bXs0tWTmZtnNm+vlVrKbRU9K8+7cZs=","encryptedMessage":"mKOoXwi8OavZ"}',
  },
} satisfies z.input<typeof CreateGooglePayBody>;

export const GOOGLE_PAY_CREATE_EXAMPLE = {
  token_intent: { ...CARD_INTENT_EXAMPLE, created_by: EXAMPLE_IDS.application },
};

const RESOURCE_IDENTITY = {
  id: "b7248b11-acfb-4695-93a9-9609f90ec038",
  tenant_id: EXAMPLE_IDS.tenant,
  status: "active" as const,
  expires_at: "2030-12-25T00:00:00.000Z",
  created_by: EXAMPLE_IDS.application,
  created_at: EXAMPLE_TIME,
};

const RESOURCE_DETAILS = {
  tsp: "Google" as const,
  auth_method: "CRYPTOGRAM_3DS",
  message_id: "AH2EjtdkuuxxO3nA7RuWAo0fU4u5BPoySvd9ajlSSrTWy3yTCu2IRbRwp8K3sFjSUS",
  eci_indicator: "07",
};

export const GOOGLE_PAY_RESOURCE_EXAMPLE = {
  ...RESOURCE_IDENTITY,
  card: { bin: "489537", last4: "3478", expiration_month: 12, expiration_year: 2030, brand: "visa" },
  data: { number: "4895370012003478", expiration_month: 12, expiration_year: 2030 },
  authentication: { threeds_cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eci_indicator: "07" },
  details: RESOURCE_DETAILS,
};
