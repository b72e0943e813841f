import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";
import type { CreateTokenIntentBody, TokenIntentResponse } from "./schema";

/*
 * A checkout's public application creates a card intent; the merchant's server (the example
 * application, which holds the intent permissions) reads it and converts it.
 */

/** Sent to the vault by test/foundation/platform.test.ts: it must stay a card the vault accepts. */
export const CARD_INTENT_REQUEST_EXAMPLE = {
  type: "card",
  data: { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" },
} satisfies z.input<typeof CreateTokenIntentBody>;

/** What the public key that created it is answered: no facts, no fingerprint. */
export const CREATED_CARD_INTENT_EXAMPLE = {
  id: EXAMPLE_IDS.tokenIntent,
  tenant_id: EXAMPLE_IDS.tenant,
  type: "card",
  created_by: EXAMPLE_IDS.publicApplication,
  created_at: EXAMPLE_TIME,
  expires_at: "2026-11-24T12:00:00.000Z",
} satisfies TokenIntentResponse;

/** The same intent as a private key reads it. */
export const CARD_INTENT_EXAMPLE = {
  ...CREATED_CARD_INTENT_EXAMPLE,
  card: { bin: "42424242", last4: "4242", expiration_month: 12, expiration_year: 2030, brand: "visa" },
  fingerprint: "WfHV8pOE4djBWKwpnHSO3BylEWZgmrVOwQSO-m5DtZY",
} satisfies TokenIntentResponse;
