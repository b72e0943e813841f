import type { OfficialFormula } from "./formula";

/**
 * Brand and BIN details of a card number, computed from the published issuer identification
 * ranges: no network, and the full number never leaves the isolate.
 */
export const cardDetails: OfficialFormula = {
  id: "1764f6d4-50e7-4d97-b083-e694788e61b3",
  name: "Card brand and BIN details",
  description:
    "Brand, BIN (6 and 8 digits), last four digits, and the Luhn and length checks of a card number, " +
    "typically passed as {{ <card_number token id> }}. Spaces and dashes are ignored.",
  status: "verified",
  configuration: [],
  request_parameters: [{ name: "card_number", description: "The card number, usually a token reference", type: "string", optional: false }],
  code: String.raw`"use strict";

const { BadRequestError } = require("@token-vault/errors");

// [brand, lowest prefix, highest prefix, valid lengths]; the longest matching prefix wins.
const SIXTEEN_TO_NINETEEN = [16, 17, 18, 19];
const RANGES = [
  ["visa", "4", "4", [13, 16, 19]],
  ["mastercard", "51", "55", [16]],
  ["mastercard", "2221", "2720", [16]],
  ["mir", "2200", "2204", SIXTEEN_TO_NINETEEN],
  ["american_express", "34", "34", [15]],
  ["american_express", "37", "37", [15]],
  ["diners_club", "300", "305", [14, 15, 16, 17, 18, 19]],
  ["diners_club", "3095", "3095", [14, 15, 16, 17, 18, 19]],
  ["diners_club", "36", "36", [14, 15, 16, 17, 18, 19]],
  ["diners_club", "38", "39", SIXTEEN_TO_NINETEEN],
  ["jcb", "3528", "3589", SIXTEEN_TO_NINETEEN],
  ["discover", "6011", "6011", SIXTEEN_TO_NINETEEN],
  ["discover", "644", "649", SIXTEEN_TO_NINETEEN],
  ["discover", "65", "65", SIXTEEN_TO_NINETEEN],
  ["discover", "622126", "622925", SIXTEEN_TO_NINETEEN],
  ["unionpay", "62", "62", SIXTEEN_TO_NINETEEN],
  ["maestro", "5018", "5018", [12, 13, 14, 15, 16, 17, 18, 19]],
  ["maestro", "5020", "5020", [12, 13, 14, 15, 16, 17, 18, 19]],
  ["maestro", "5038", "5038", [12, 13, 14, 15, 16, 17, 18, 19]],
  ["maestro", "5893", "5893", [12, 13, 14, 15, 16, 17, 18, 19]],
  ["maestro", "6304", "6304", [12, 13, 14, 15, 16, 17, 18, 19]],
  ["maestro", "6759", "6759", [12, 13, 14, 15, 16, 17, 18, 19]],
  ["maestro", "6761", "6763", [12, 13, 14, 15, 16, 17, 18, 19]],
];

function brandOf(number) {
  let best = null;
  for (const [brand, low, high, lengths] of RANGES) {
    const prefix = number.slice(0, low.length);
    const matches = prefix.length === low.length && Number(prefix) >= Number(low) && Number(prefix) <= Number(high);
    if (matches && (!best || low.length > best.prefixLength)) best = { brand, lengths, prefixLength: low.length };
  }
  return best;
}

function passesLuhn(digits) {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

module.exports = async function (req) {
  const number = req.args.card_number.replace(/[\s-]/g, "");
  if (!/^\d{12,19}$/.test(number)) {
    throw new BadRequestError("card_number must hold 12 to 19 digits (spaces and dashes are ignored)");
  }
  const match = brandOf(number);
  const lengthValid = match !== null && match.lengths.includes(number.length);
  const luhnValid = passesLuhn(number);
  return {
    raw: {
      brand: match ? match.brand : "unknown",
      bin: number.slice(0, number.length >= 16 ? 8 : 6),
      iin: number.slice(0, 6),
      last4: number.slice(-4),
      length: number.length,
      length_valid: lengthValid,
      luhn_valid: luhnValid,
      valid: lengthValid && luhnValid,
    },
  };
};
`,
};
