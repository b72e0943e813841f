/** The token types: how each validates its data and what it gets when the request says nothing. */
export const TOKEN_TYPES = [
  "token",
  "card_number",
  "social_security_number",
  "employer_id_number",
  "us_bank_account_number",
  "us_bank_routing_number",
] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

export interface TokenTypeRules {
  /** Why the data is refused (never echoing it), or null when it is valid. */
  refuse(data: unknown): string | null;
  container: string;
  fingerprintExpression: string;
  mask: string | null;
  /** Search indexes used when the request gives none; null when the type may not have any. */
  defaultSearchIndexes: string[] | null;
}

const LAST_FOUR = "{{ data | reveal_last: 4 }}";
const WITHOUT_DASHES = "{{ data | remove: '-' }}";
const DASHED_NUMBER_INDEXES = ["{{ data }}", WITHOUT_DASHES, "{{ data | last4 }}"];

export const TOKEN_TYPE_RULES: Record<TokenType, TokenTypeRules> = {
  token: {
    refuse: (data) => (data === null ? "must not be null" : null),
    container: "/general/high/",
    fingerprintExpression: "{{ data | stringify }}",
    mask: null,
    defaultSearchIndexes: [],
  },
  card_number: {
    refuse: (data) =>
      typeof data !== "string" || !/^\d{13,19}$/.test(data)
        ? "must be a string of 13 to 19 digits"
        : passesLuhn(data)
          ? null
          : "must pass the Luhn check",
    container: "/pci/high/",
    fingerprintExpression: "{{ data }}",
    mask: LAST_FOUR,
    defaultSearchIndexes: null,
  },
  social_security_number: {
    refuse: (data) =>
      typeof data === "string" && /^(?:\d{9}|\d{3}-\d{2}-\d{4})$/.test(data)
        ? null
        : "must be 9 digits, optionally dashed as NNN-NN-NNNN",
    container: "/pii/high/",
    fingerprintExpression: WITHOUT_DASHES,
    mask: LAST_FOUR,
    defaultSearchIndexes: DASHED_NUMBER_INDEXES,
  },
  employer_id_number: {
    refuse: (data) =>
      typeof data === "string" && /^(?:\d{9}|\d{2}-\d{7})$/.test(data)
        ? null
        : "must be 9 digits, optionally dashed as NN-NNNNNNN",
    container: "/pii/high/",
    fingerprintExpression: WITHOUT_DASHES,
    mask: LAST_FOUR,
    defaultSearchIndexes: DASHED_NUMBER_INDEXES,
  },
  us_bank_account_number: {
    refuse: (data) => (typeof data === "string" && /^\d{3,17}$/.test(data) ? null : "must be a string of 3 to 17 digits"),
    container: "/bank/high/",
    fingerprintExpression: "{{ data }}",
    mask: LAST_FOUR,
    defaultSearchIndexes: null,
  },
  us_bank_routing_number: {
    refuse: (data) =>
      typeof data !== "string" || !/^\d{9}$/.test(data)
        ? "must be a string of 9 digits"
        : passesAbaChecksum(data)
          ? null
          : "must pass the ABA routing number checksum",
    container: "/bank/low/",
    fingerprintExpression: "{{ data }}",
    mask: LAST_FOUR,
    defaultSearchIndexes: null,
  },
};

export function isTokenType(type: string): type is TokenType {
  return Object.hasOwn(TOKEN_TYPE_RULES, type);
}

/** Luhn mod 10: every second digit from the right is doubled. */
function passesLuhn(digits: string): boolean {
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

/** ABA: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) is a multiple of 10. */
function passesAbaChecksum(digits: string): boolean {
  const d = Array.from(digits, Number);
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!);
  return sum % 10 === 0;
}
