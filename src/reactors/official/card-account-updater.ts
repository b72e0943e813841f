import type { OfficialFormula } from "./formula";

/** Announced, not yet available: reactors cannot be made from it until it is verified. */
export const cardAccountUpdater: OfficialFormula = {
  id: "53b5a5c5-3ee8-4ac0-a0bf-64b3288df2cc",
  name: "Card account updater",
  description:
    "Refreshes a card_number token whose card was reissued, through the card networks' account updater " + "services. In private beta.",
  status: "coming_soon",
  configuration: [],
  request_parameters: [{ name: "card_number", description: "The card number, usually a token reference", type: "string", optional: false }],
  code: `"use strict";

const { BadRequestError } = require("@token-vault/errors");

module.exports = async function () {
  throw new BadRequestError("The card account updater is not available yet");
};
`,
};
