/*
 * Card numbers, expiration dates and security codes as a frame checks them while they are typed.
 * Pure functions of the digits (and of today's date), so that Node tests can hold them to the rules.
 */

export type CardBrand = "visa" | "mastercard" | "american-express" | "discover" | "diners-club" | "jcb" | "unionpay" | "maestro";

export type ErrorCode = "incomplete" | "invalid" | "luhn" | "expired";

export interface FieldError {
  field: "number" | "expiration" | "cvc" | "value";
  code: ErrorCode;
}

interface BrandRules {
  brand: CardBrand;
  /** Ranges of leading digits, both ends with as many digits ("51"–"55"); one string is a range of one. */
  prefixes: (string | [string, string])[];
  lengths: number[];
  /** The positions after which a space is shown. */
  gaps: number[];
  cvcLength: number;
}

const FOUR_BY_FOUR = [4, 8, 12];

/** Lengths stay within what the vault accepts for a card number (13 to 19 digits, src/tokens/types.ts). */
export const BRANDS: BrandRules[] = [
  { brand: "visa", prefixes: ["4"], lengths: [16, 18, 19], gaps: FOUR_BY_FOUR, cvcLength: 3 },
  {
    brand: "mastercard",
    prefixes: [
      ["51", "55"],
      ["2221", "2720"],
    ],
    lengths: [16],
    gaps: FOUR_BY_FOUR,
    cvcLength: 3,
  },
  { brand: "american-express", prefixes: ["34", "37"], lengths: [15], gaps: [4, 10], cvcLength: 4 },
  { brand: "diners-club", prefixes: [["300", "305"], "36", ["38", "39"]], lengths: [14, 16, 19], gaps: [4, 10], cvcLength: 3 },
  { brand: "discover", prefixes: ["6011", ["644", "649"], "65"], lengths: [16, 19], gaps: FOUR_BY_FOUR, cvcLength: 3 },
  { brand: "jcb", prefixes: ["2131", "1800", ["3528", "3589"]], lengths: [16, 17, 18, 19], gaps: FOUR_BY_FOUR, cvcLength: 3 },
  { brand: "unionpay", prefixes: ["62", ["8100", "8171"]], lengths: [14, 15, 16, 17, 18, 19], gaps: FOUR_BY_FOUR, cvcLength: 3 },
  {
    brand: "maestro",
    prefixes: ["493698", ["50", "50"], ["56", "58"], "6304", "6390", "67"],
    lengths: [13, 14, 15, 16, 17, 18, 19],
    gaps: FOUR_BY_FOUR,
    cvcLength: 3,
  },
];

export const MAX_NUMBER_LENGTH = 19;

/**
 * The brand whose range the digits start with (the longest matching range wins), or null; and
 * whether some brand's range could still be reached by typing more.
 */
export function detectBrand(digits: string): { rules: BrandRules | null; possible: boolean } {
  let rules: BrandRules | null = null;
  let matchedLength = 0;
  let possible = digits.length === 0;
  for (const candidate of BRANDS) {
    for (const prefix of candidate.prefixes) {
      const [from, to] = typeof prefix === "string" ? [prefix, prefix] : prefix;
      const length = Math.min(from.length, digits.length);
      const head = digits.slice(0, length);
      if (head < from.slice(0, length) || head > to.slice(0, length)) continue;
      possible = true;
      if (digits.length >= from.length && from.length > matchedLength) {
        rules = candidate;
        matchedLength = from.length;
      }
    }
  }
  return { rules, possible };
}

export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}

export interface NumberCheck {
  brand: CardBrand | undefined;
  error: ErrorCode | undefined;
  /** The longest number this brand has: typing stops there. */
  maxLength: number;
}

/**
 * `incomplete` until the number reaches one of its brand's lengths, then `luhn` unless it passes
 * the check; `invalid` when no brand starts with these digits, or past the brand's longest length.
 */
export function checkNumber(digits: string): NumberCheck {
  const { rules, possible } = detectBrand(digits);
  const maxLength = rules ? Math.max(...rules.lengths) : MAX_NUMBER_LENGTH;
  const brand = rules?.brand;
  if (!possible || digits.length > maxLength) return { brand, error: "invalid", maxLength };
  if (!rules?.lengths.includes(digits.length)) return { brand, error: "incomplete", maxLength };
  return { brand, error: passesLuhn(digits) ? undefined : "luhn", maxLength };
}

/** The digits with a space at each of the brand's gaps: "4242 4242 4242 4242", "3782 822463 10005". */
export function groupNumber(digits: string): string {
  const gaps = detectBrand(digits).rules?.gaps ?? FOUR_BY_FOUR;
  let grouped = "";
  for (let index = 0; index < digits.length; index++) {
    if (gaps.includes(index)) grouped += " ";
    grouped += digits[index];
  }
  return grouped;
}

export function cvcLengthOf(brand: CardBrand | undefined): number | undefined {
  return BRANDS.find((rules) => rules.brand === brand)?.cvcLength;
}

/** Three digits, or four for American Express; without a brand, either. */
export function checkCvc(digits: string, brand: CardBrand | undefined): ErrorCode | undefined {
  const expected = cvcLengthOf(brand);
  if (expected === undefined) return digits.length >= 3 && digits.length <= 4 ? undefined : digits.length > 4 ? "invalid" : "incomplete";
  if (digits.length < expected) return "incomplete";
  return digits.length === expected ? undefined : "invalid";
}

/** How far ahead an expiration date may be. */
const MAX_YEARS_AHEAD = 50;

/**
 * The month and year of what was typed ("MM / YY"), pasted or autofilled (MM/YY, MM/YYYY, MMYY).
 * Without a separator, a first digit above 1 is a month of one digit: "4" is April.
 */
export function parseExpiration(text: string): { monthDigits: string; yearDigits: string; month?: number; year?: number } {
  const [before = "", after] = text.split("/");
  let monthDigits = before.replace(/\D/g, "");
  let yearDigits: string;
  if (after === undefined) {
    const short = monthDigits.length > 0 && monthDigits[0]! > "1";
    yearDigits = monthDigits.slice(short ? 1 : 2);
    monthDigits = short ? `0${monthDigits[0]}` : monthDigits.slice(0, 2);
  } else {
    yearDigits = after.replace(/\D/g, "");
    monthDigits = monthDigits.slice(0, 2).padStart(2, "0");
  }
  return {
    monthDigits,
    yearDigits,
    month: monthDigits.length === 2 ? Number(monthDigits) : undefined,
    year: yearDigits.length === 2 ? 2000 + Number(yearDigits) : yearDigits.length === 4 ? Number(yearDigits) : undefined,
  };
}

/** `incomplete` until month and year are typed, `invalid` for a month outside 1–12, `expired` before this month. */
export function checkExpiration(month: number | undefined, year: number | undefined, today: Date): ErrorCode | undefined {
  if (month !== undefined && (month < 1 || month > 12)) return "invalid";
  if (month === undefined || year === undefined) return "incomplete";
  const thisYear = today.getFullYear();
  if (year < thisYear || (year === thisYear && month < today.getMonth() + 1)) return "expired";
  return year > thisYear + MAX_YEARS_AHEAD ? "invalid" : undefined;
}
