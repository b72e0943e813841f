import { TOKENS } from "../limits";
import { ExpressionError } from "./errors";

/** A card number with fewer than 16 digits has a 6-digit BIN, a longer one an 8-digit BIN. */
export function binLength(digitCount: number): number {
  return digitCount < 16 ? 6 : 8;
}

/** `card_bin`: the first 6 or 8 digits of a card number, separators left out. */
export function cardBin(number: string, separators: ReadonlySet<string>): string {
  const digits = [...number].filter((character) => !separators.has(character));
  const length = binLength(digits.length);
  if (digits.length <= length) throw new ExpressionError("card_bin needs a card number longer than its BIN");
  return digits.slice(0, length).join("");
}

export const CARD_EXP_FORMAT_MAX_LENGTH = TOKENS.cardExpFormatMaxLength;
const EXPIRATION_FORMAT = /^(?:YYYY|YY|MM|[^A-Za-z])+$/;
const EXPIRATION_PLACEHOLDER = /YYYY|YY|MM/g;

/** `card_exp: 'MM/YY'`: a card's expiration in a format of MM, YY, YYYY and separators. */
export function cardExpiration(card: unknown, format: string): string {
  if (format.length > CARD_EXP_FORMAT_MAX_LENGTH || !EXPIRATION_FORMAT.test(format)) {
    throw new ExpressionError(`card_exp needs a format of MM, YY, YYYY and separators (at most ${CARD_EXP_FORMAT_MAX_LENGTH} characters)`);
  }
  const month = expirationPart(card, "expiration_month", 1, 12);
  const year = expirationPart(card, "expiration_year", 0, 9999);
  return format.replace(EXPIRATION_PLACEHOLDER, (placeholder) =>
    placeholder === "MM" ? twoDigits(month) : placeholder === "YY" ? twoDigits(year % 100) : String(year).padStart(4, "0"),
  );
}

function expirationPart(card: unknown, member: string, min: number, max: number): number {
  const value =
    card !== null && typeof card === "object" && Object.hasOwn(card, member) ? (card as Record<string, unknown>)[member] : undefined;
  const number = typeof value === "string" && /^\d{1,4}$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isInteger(number) || number < min || number > max) {
    throw new ExpressionError(`card_exp needs a card whose ${member} is a whole number from ${min} to ${max}`);
  }
  return number;
}

function twoDigits(value: number): string {
  return String(value).padStart(2, "0");
}
