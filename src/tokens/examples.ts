import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, exampleChangedBy } from "../http/examples";
import type { CreatedTokenResponse, CreateTokenBody, TokenResponse, UpdatedTokenResponse, UpdateTokenBody } from "./schema";

/*
 * The answers are as the example application (EXAMPLE_IDS.application, src/applications/examples.ts)
 * sees them: its rules mask tokens for everything but token:use, so card data is masked and the
 * cvc, which no mask of the card type shows, is left out.
 */

/** The ids of the tokens TOKENIZE_REQUEST_EXAMPLE creates, one per value it protects. */
const TOKENIZED_IDS = {
  firstName: "8a1f3c5e-7b9d-4f2a-b4c6-d8e0f2a4c6e8",
  ssn: "2e4c6a8f-0d1b-4c3e-a5f7-9b1d3f5a7c9e",
  cardNumber: "6d8f0b2c-4e6a-4b8d-9f1c-3e5a7c9e1b3d",
} as const;

/** Sent to the vault by test/foundation/platform.test.ts: it must stay a card the vault accepts. */
export const CARD_TOKEN_REQUEST_EXAMPLE = {
  type: "card",
  data: { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" },
  metadata: { customer_id: "c-1042" },
  deduplicate_token: true,
} satisfies z.input<typeof CreateTokenBody>;

/** The token CARD_TOKEN_REQUEST_EXAMPLE makes: the card type's container, fingerprint expression and mask. */
export const CARD_TOKEN_EXAMPLE = {
  id: EXAMPLE_IDS.token,
  type: "card",
  tenant_id: EXAMPLE_IDS.tenant,
  data: { number: "XXXXXXXXXXXX4242", expiration_month: 12, expiration_year: 2030 },
  fingerprint: "WfHV8pOE4djBWKwpnHSO3BylEWZgmrVOwQSO-m5DtZY",
  containers: ["/pci/high/"],
  metadata: CARD_TOKEN_REQUEST_EXAMPLE.metadata,
  search_indexes: [],
  fingerprint_expression: "{{ data.number }}",
  mask: {
    number: "{{ data.number | reveal_last: 4 }}",
    expiration_month: "{{ data.expiration_month }}",
    expiration_year: "{{ data.expiration_year }}",
  },
  expires_at: null,
  ...exampleChangedBy(EXAMPLE_IDS.application),
} satisfies TokenResponse;

export const CREATED_CARD_TOKEN_EXAMPLE = { ...CARD_TOKEN_EXAMPLE, _extras: { deduplicated: false } } satisfies CreatedTokenResponse;

/** The same card sent again with deduplicate_token: the existing token, nothing new stored. */
export const DEDUPLICATED_CARD_TOKEN_EXAMPLE = { ...CARD_TOKEN_EXAMPLE, _extras: { deduplicated: true } } satisfies CreatedTokenResponse;

/** A renewed card: `data` merges, so the number stays; `metadata` merges, so customer_id stays. */
export const CARD_TOKEN_PATCH_EXAMPLE = {
  data: { expiration_month: 1, expiration_year: 2031 },
  metadata: { order_id: "o-7731" },
} satisfies z.input<typeof UpdateTokenBody>;

export const PATCHED_CARD_TOKEN_EXAMPLE = {
  ...CARD_TOKEN_EXAMPLE,
  data: { ...CARD_TOKEN_EXAMPLE.data, ...CARD_TOKEN_PATCH_EXAMPLE.data },
  metadata: { ...CARD_TOKEN_EXAMPLE.metadata, ...CARD_TOKEN_PATCH_EXAMPLE.metadata },
  _extras: { deduplicated: false },
} satisfies UpdatedTokenResponse;

/** Sent to the vault by test/foundation/platform.test.ts: a plain value, a typed request and an array. */
export const TOKENIZE_REQUEST_EXAMPLE = {
  first_name: "Ada",
  ssn: { type: "social_security_number", data: "123-45-6789" },
  cards: [{ type: "card_number", data: "4242424242424242" }],
};

const TOKENIZED_SSN_EXAMPLE = {
  id: TOKENIZED_IDS.ssn,
  type: "social_security_number",
  tenant_id: EXAMPLE_IDS.tenant,
  data: "XXX-XX-6789",
  fingerprint: "kButQn3vy63cLLbWQ4sxeSeqHsx-6yv7NYzb_CKdWts",
  containers: ["/pii/high/"],
  metadata: {},
  search_indexes: ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"],
  fingerprint_expression: "{{ data | remove: '-' }}",
  mask: "{{ data | reveal_last: 4 }}",
  expires_at: null,
  ...exampleChangedBy(EXAMPLE_IDS.application),
  _extras: { deduplicated: false },
} satisfies CreatedTokenResponse;

/** Fingerprints are keyed by type: this one differs from the card token's, though the number is the same. */
const TOKENIZED_CARD_NUMBER_EXAMPLE = {
  id: TOKENIZED_IDS.cardNumber,
  type: "card_number",
  tenant_id: EXAMPLE_IDS.tenant,
  data: "XXXXXXXXXXXX4242",
  fingerprint: "6y4XIdUNiCR4UFbRncLSYxiDfEMCGud2vsOvMVKFetI",
  containers: ["/pci/high/"],
  metadata: {},
  search_indexes: [],
  fingerprint_expression: "{{ data }}",
  mask: "{{ data | reveal_last: 4 }}",
  expires_at: null,
  ...exampleChangedBy(EXAMPLE_IDS.application),
  _extras: { deduplicated: false },
} satisfies CreatedTokenResponse;

/** TOKENIZE_REQUEST_EXAMPLE tokenized: the plain value by its token's id, each request by its token. */
export const TOKENIZED_EXAMPLE = {
  first_name: TOKENIZED_IDS.firstName,
  ssn: TOKENIZED_SSN_EXAMPLE,
  cards: [TOKENIZED_CARD_NUMBER_EXAMPLE],
};

/** A charge for a payment partner, the card's fields read from CARD_TOKEN_EXAMPLE (also the /proxy body example). */
export const CARD_CHARGE_EXAMPLE = {
  amount: 1999,
  currency: "usd",
  card: {
    number: `{{ ${EXAMPLE_IDS.token} | json: '$.number' }}`,
    exp_month: `{{ ${EXAMPLE_IDS.token} | json: '$.expiration_month' | pad_left: 2, '0' }}`,
    exp_year: `{{ ${EXAMPLE_IDS.token} | json: '$.expiration_year' }}`,
  },
};

export const DETOKENIZE_REQUEST_EXAMPLE = {
  ...CARD_CHARGE_EXAMPLE,
  card: { ...CARD_CHARGE_EXAMPLE.card, last4: `{{ ${EXAMPLE_IDS.token} | json: '$.number' | last4 }}` },
};

/** DETOKENIZE_REQUEST_EXAMPLE with token:use, which the example application holds with reveal. */
export const DETOKENIZED_EXAMPLE = {
  amount: 1999,
  currency: "usd",
  card: { number: "4242424242424242", exp_month: "12", exp_year: "2030", last4: "4242" },
};
