/** The token types: how each validates its data and what it gets when the request says nothing. */
export const TOKEN_TYPES = [
  "token",
  "card_number",
  "social_security_number",
  "employer_id_number",
  "us_bank_account_number",
  "us_bank_routing_number",
  "card",
  "bank",
] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

/** Why (part of) the data is refused, never echoing it: `path` is under `data` (empty for all of it). */
export interface Refusal {
  path: string[];
  message: string;
}

/** A mask: one expression, or a JSON template (object or array) whose string leaves are expressions. */
export type Mask = string | Record<string, unknown> | unknown[];

export interface TokenTypeRules {
  /** Why the data is refused, member by member; empty when it is valid. */
  refuse(data: unknown): Refusal[];
  container: string;
  fingerprintExpression: string;
  mask: Mask | null;
  /** Search indexes used when the request gives none; null when the type may not have any. */
  defaultSearchIndexes: string[] | null;
}

const LAST_FOUR = "{{ data | reveal_last: 4 }}";
/** The type's data as a whole is refused with this message, or accepted when it is null. */
const whole = (message: string | null): Refusal[] => (message === null ? [] : [{ path: [], message }]);
const WITHOUT_DASHES = "{{ data | remove: '-' }}";
const DASHED_NUMBER_INDEXES = ["{{ data }}", WITHOUT_DASHES, "{{ data | last4 }}"];

export const TOKEN_TYPE_RULES: Record<TokenType, TokenTypeRules> = {
  token: {
    refuse: (data) => whole(data === null ? "must not be null" : null),
    container: "/general/high/",
    fingerprintExpression: "{{ data | stringify }}",
    mask: null,
    defaultSearchIndexes: [],
  },
  card: {
    // The expiry is optional, as the current docs have it, but whole: a month means nothing without its year.
    refuse: (data) => [
      ...refuseMembers(data, {
        number: { required: true, refuse: refuseCardNumber },
        expiration_month: {
          required: false,
          refuse: (month) =>
            Number.isInteger(month) && (month as number) >= 1 && (month as number) <= 12 ? null : "must be an integer from 1 to 12",
        },
        expiration_year: {
          required: false,
          refuse: (year) =>
            Number.isInteger(year) && (year as number) >= 1000 && (year as number) <= 9999 ? null : "must be a four-digit integer",
        },
        cvc: {
          required: false,
          refuse: (cvc) => (typeof cvc === "string" && /^\d{3,4}$/.test(cvc) ? null : "must be a string of 3 or 4 digits"),
        },
      }),
      ...refuseHalfOf(data, ["expiration_month", "expiration_year"]),
    ],
    container: "/pci/high/",
    fingerprintExpression: "{{ data.number }}",
    // Never the cvc; the expiry is not a secret on its own.
    mask: {
      number: "{{ data.number | reveal_last: 4 }}",
      expiration_month: "{{ data.expiration_month }}",
      expiration_year: "{{ data.expiration_year }}",
    },
    // None by default, as for type token; the current docs let a card take any (`{{ data.number | last4 }}`).
    defaultSearchIndexes: [],
  },
  bank: {
    refuse: (data) =>
      refuseMembers(data, {
        routing_number: { required: true, refuse: refuseRoutingNumber },
        account_number: { required: true, refuse: refuseAccountNumber },
      }),
    container: "/bank/high/",
    fingerprintExpression: "{{ data.account_number }}|{{ data.routing_number }}",
    mask: { routing_number: "{{ data.routing_number }}", account_number: "{{ data.account_number | reveal_last: 4 }}" },
    defaultSearchIndexes: null,
  },
  card_number: {
    refuse: (data) => whole(refuseCardNumber(data)),
    container: "/pci/high/",
    fingerprintExpression: "{{ data }}",
    mask: LAST_FOUR,
    defaultSearchIndexes: null,
  },
  social_security_number: {
    refuse: (data) =>
      whole(
        typeof data === "string" && /^(?:\d{9}|\d{3}-\d{2}-\d{4})$/.test(data)
          ? null
          : "must be 9 digits, optionally dashed as NNN-NN-NNNN",
      ),
    container: "/pii/high/",
    fingerprintExpression: WITHOUT_DASHES,
    mask: LAST_FOUR,
    defaultSearchIndexes: DASHED_NUMBER_INDEXES,
  },
  employer_id_number: {
    refuse: (data) =>
      whole(typeof data === "string" && /^(?:\d{9}|\d{2}-\d{7})$/.test(data) ? null : "must be 9 digits, optionally dashed as NN-NNNNNNN"),
    container: "/pii/high/",
    fingerprintExpression: WITHOUT_DASHES,
    mask: LAST_FOUR,
    defaultSearchIndexes: DASHED_NUMBER_INDEXES,
  },
  us_bank_account_number: {
    refuse: (data) => whole(refuseAccountNumber(data)),
    container: "/bank/high/",
    fingerprintExpression: "{{ data }}",
    mask: LAST_FOUR,
    defaultSearchIndexes: null,
  },
  us_bank_routing_number: {
    refuse: (data) => whole(refuseRoutingNumber(data)),
    container: "/bank/low/",
    fingerprintExpression: "{{ data }}",
    mask: LAST_FOUR,
    defaultSearchIndexes: null,
  },
};

/** The types whose tokens may have search indexes, so `data:` can find them. */
export const SEARCHABLE_TYPES = TOKEN_TYPES.filter((type) => TOKEN_TYPE_RULES[type].defaultSearchIndexes !== null);

export function isTokenType(type: string): type is TokenType {
  return Object.hasOwn(TOKEN_TYPE_RULES, type);
}

function refuseCardNumber(data: unknown): string | null {
  if (typeof data !== "string" || !/^\d{13,19}$/.test(data)) return "must be a string of 13 to 19 digits";
  return passesLuhn(data) ? null : "must pass the Luhn check";
}

/** Whether a value is a card number as a `card_number` token's data would be (a JSON integer's digits too). */
function isCardNumber(value: unknown): boolean {
  return refuseCardNumber(typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value) === null;
}

/**
 * Whether data, or any value nested in it, is a card number: client-encrypted data carries no type,
 * so what it holds, not the type a caller names, decides whether it is a card's (docs/decisions.md,
 * "Client encryption keys"). Its depth is a body's, bounded before it gets here.
 */
export function holdsCardNumber(data: unknown): boolean {
  if (isCardNumber(data)) return true;
  return data !== null && typeof data === "object" && Object.values(data).some(holdsCardNumber);
}

function refuseRoutingNumber(data: unknown): string | null {
  if (typeof data !== "string" || !/^\d{9}$/.test(data)) return "must be a string of 9 digits";
  return passesAbaChecksum(data) ? null : "must pass the ABA routing number checksum";
}

function refuseAccountNumber(data: unknown): string | null {
  return typeof data === "string" && /^\d{3,17}$/.test(data) ? null : "must be a string of 3 to 17 digits";
}

interface MemberRule {
  required: boolean;
  /** Why the member's value is refused, or null. */
  refuse(value: unknown): string | null;
}

/** Object data with exactly these members: each refusal names its member, none echoes a value. */
function refuseMembers(data: unknown, members: Record<string, MemberRule>): Refusal[] {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return whole("must be an object");
  const refusals: Refusal[] = [];
  for (const [name, rule] of Object.entries(members)) {
    const value = (data as Record<string, unknown>)[name];
    if (!Object.hasOwn(data, name) || value === null) {
      if (rule.required) refusals.push({ path: [name], message: "is required" });
      continue;
    }
    const refusal = rule.refuse(value);
    if (refusal) refusals.push({ path: [name], message: refusal });
  }
  for (const name of Object.keys(data).filter((key) => !Object.hasOwn(members, key))) {
    refusals.push({ path: [name], message: "is not a member of this type" });
  }
  return refusals;
}

/** Members that go together: when some are given (not null), each missing one is refused. */
function refuseHalfOf(data: unknown, members: string[]): Refusal[] {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return [];
  const given = (name: string) => (data as Record<string, unknown>)[name] != null;
  const present = members.filter(given);
  if (present.length === 0 || present.length === members.length) return [];
  return members.filter((name) => !given(name)).map((name) => ({ path: [name], message: `is required with ${present.join(" and ")}` }));
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
