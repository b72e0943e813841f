import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, EXAMPLE_TIME, exampleChangedBy, exampleCreatedBy } from "../http/examples";
import type {
  FormulaBody,
  FormulaResponse,
  ReactBody,
  ReactionResult,
  ReactorBody,
  ReactorPatchBody,
  ReactorReplacementBody,
  ReactorResponse,
  ReactResult,
} from "./schema";

/** Sent to the vault by test/foundation/platform.test.ts: it must stay a formula the vault accepts. */
export const FORMULA_REQUEST_EXAMPLE = {
  name: "Charge a card",
  description: "Sends the card to the processor with the merchant's key",
  type: "private",
  code: "module.exports = async function (req) {\n  return { raw: { charged: req.args.card_number.slice(-4), merchant: req.configuration.MERCHANT_ID } };\n};",
  configuration: [{ name: "MERCHANT_ID", description: "The processor's merchant id", type: "string" }],
  request_parameters: [{ name: "card_number", description: "A card number, or a reference to its token", type: "string", optional: false }],
} satisfies z.input<typeof FormulaBody>;

/** The formula FORMULA_REQUEST_EXAMPLE creates: private formulas are verified at once. */
export const FORMULA_EXAMPLE = {
  id: EXAMPLE_IDS.formula,
  ...FORMULA_REQUEST_EXAMPLE,
  status: "verified",
  icon: null,
  ...exampleCreatedBy(EXAMPLE_IDS.managementApplication),
} satisfies FormulaResponse;

export const FORMULA_REPLACEMENT_EXAMPLE = {
  ...FORMULA_REQUEST_EXAMPLE,
  description: "Sends the card to the processor with the merchant's key; answers the card's last four digits",
} satisfies z.input<typeof FormulaBody>;

export const REPLACED_FORMULA_EXAMPLE = {
  ...FORMULA_EXAMPLE,
  description: FORMULA_REPLACEMENT_EXAMPLE.description,
  ...exampleChangedBy(EXAMPLE_IDS.managementApplication),
} satisfies FormulaResponse;

/**
 * A reactor with its own code (the current interface), configured with strings: sent to the vault by
 * test/foundation/platform.test.ts, so it must stay a reactor the vault accepts. A reactor of a formula
 * sends `formula: {id}` instead of `code` and `runtime`.
 */
export const REACTOR_REQUEST_EXAMPLE = {
  name: "Card charger",
  code: FORMULA_REQUEST_EXAMPLE.code,
  runtime: { image: "node-bt" },
  configuration: { MERCHANT_ID: "merchant-8841" },
} satisfies z.input<typeof ReactorBody>;

export const REACTOR_EXAMPLE = {
  id: EXAMPLE_IDS.reactor,
  tenant_id: EXAMPLE_IDS.tenant,
  name: REACTOR_REQUEST_EXAMPLE.name,
  formula: null,
  code: REACTOR_REQUEST_EXAMPLE.code,
  runtime: REACTOR_REQUEST_EXAMPLE.runtime,
  configuration: REACTOR_REQUEST_EXAMPLE.configuration,
  application: null,
  application_id: null,
  ...exampleCreatedBy(EXAMPLE_IDS.managementApplication),
} satisfies ReactorResponse;

/** Without `formula` and `code`: the reactor keeps what it runs. */
export const REACTOR_REPLACEMENT_EXAMPLE = {
  name: "Card charger",
  configuration: { MERCHANT_ID: "merchant-9920" },
} satisfies z.input<typeof ReactorReplacementBody>;

export const REPLACED_REACTOR_EXAMPLE = {
  ...REACTOR_EXAMPLE,
  configuration: REACTOR_REPLACEMENT_EXAMPLE.configuration,
  ...exampleChangedBy(EXAMPLE_IDS.managementApplication),
} satisfies ReactorResponse;

export const REACTOR_PATCH_EXAMPLE = { configuration: { MERCHANT_ID: "merchant-9920" } } satisfies z.input<typeof ReactorPatchBody>;

/** Runs REACTOR_EXAMPLE on the number of the example card token. */
export const REACT_REQUEST_EXAMPLE = {
  args: { card_number: `{{ ${EXAMPLE_IDS.token} | json: '$.number' }}` },
} satisfies z.input<typeof ReactBody>;

/** What FORMULA_EXAMPLE's code answers: no tokenize output, so no tokens. */
export const REACT_RESULT_EXAMPLE = {
  tokens: null,
  raw: { charged: "4242", merchant: REACTOR_REQUEST_EXAMPLE.configuration.MERCHANT_ID },
} satisfies ReactResult;

/** The request id of the example async reaction. */
const EXAMPLE_REACTION_ID = "3254626a-e1cf-4616-968f-e08a7ade4fce";

export const REACTION_ACCEPTED_EXAMPLE = { asyncReactorRequestId: EXAMPLE_REACTION_ID };

/** REACT_REQUEST_EXAMPLE sent to react-async, once the queue's consumer has run it. */
export const REACTION_RESULT_EXAMPLE = {
  id: EXAMPLE_REACTION_ID,
  reactor_id: EXAMPLE_IDS.reactor,
  status: "completed",
  ...REACT_RESULT_EXAMPLE,
  error: null,
  response: null,
  created_at: EXAMPLE_TIME,
  completed_at: "2026-11-23T12:00:00.180Z",
  expires_at: "2026-11-24T12:00:00.000Z",
} satisfies ReactionResult;
