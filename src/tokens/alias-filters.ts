import { binLength } from "./card-filters";
import { ExpressionError } from "./errors";

/**
 * Alias filters make a random stand-in for a value (a token id that looks like the data). Like a
 * mask, an alias never carries the whole value: when the characters it would reveal cover the
 * value, it reveals none, and an alias that comes out equal to the value is drawn again.
 */

const DIGITS = "0123456789";
const LOWER_CASE = "abcdefghijklmnopqrstuvwxyz";
const UPPER_CASE = LOWER_CASE.toUpperCase();
const ALPHANUMERIC = LOWER_CASE + DIGITS;
const CARD_DELIMITERS = new Set([" ", "-"]);
const DRAWS = 10;

/** `alias_preserve_format`: random digits for digits, random letters (same case) for letters; the rest stays. */
export function aliasPreserveFormat(text: string, first: number, last: number): string {
  return aliasOf(text, first, last, (character, pick) =>
    /\p{Nd}/u.test(character)
      ? pick(DIGITS)
      : /\p{Lu}/u.test(character)
        ? pick(UPPER_CASE)
        : /\p{L}/u.test(character)
          ? pick(LOWER_CASE)
          : character,
  );
}

/** `alias_preserve_length`: every character becomes a random lower-case letter or digit. */
export function aliasPreserveLength(text: string, first: number, last: number): string {
  return aliasOf(text, first, last, (_character, pick) => pick(ALPHANUMERIC));
}

/**
 * `alias_card`: a random card number with the same delimiters and length, optionally the same BIN
 * and last four digits, and a valid Luhn check (one of the random digits is chosen to satisfy it).
 */
export function aliasCard(number: string, reveal: { bin: boolean; last4: boolean }): string {
  const characters = [...number];
  if (characters.some((character) => !CARD_DELIMITERS.has(character) && !DIGITS.includes(character))) {
    throw new ExpressionError("alias_card needs a card number of digits, spaces and dashes");
  }
  const digitPositions = characters.flatMap((character, index) => (CARD_DELIMITERS.has(character) ? [] : [index]));
  const count = digitPositions.length;
  const bin = binLength(count);
  const kept = digitPositions.map((_, ordinal) => (reveal.bin && ordinal < bin) || (reveal.last4 && ordinal >= count - 4));
  const free = kept.flatMap((keep, ordinal) => (keep ? [] : [ordinal]));
  // One random digit is spent on the Luhn check; with no other the alias would be the number itself.
  if (free.length < 2) throw new ExpressionError("alias_card needs a card number with at least two digits it does not reveal");
  const checkOrdinal = free.at(-1)!;
  return drawDifferent(number, (pick) => {
    const digits = digitPositions.map((position, ordinal) => (kept[ordinal] ? Number(characters[position]) : Number(pick(DIGITS))));
    digits[checkOrdinal] = luhnCompletion(digits, checkOrdinal);
    const alias = [...characters];
    for (const [ordinal, position] of digitPositions.entries()) alias[position] = String(digits[ordinal]);
    return alias.join("");
  });
}

/** The digit at `ordinal` that makes the whole number pass the Luhn check. */
function luhnCompletion(digits: number[], ordinal: number): number {
  const weigh = (digit: number, index: number) => {
    if ((digits.length - 1 - index) % 2 === 0) return digit;
    const doubled = digit * 2;
    return doubled > 9 ? doubled - 9 : doubled;
  };
  const others = digits.reduce((sum, digit, index) => (index === ordinal ? sum : sum + weigh(digit, index)), 0);
  // Weighing is a one-to-one map of 0-9, so exactly one digit completes the sum to a multiple of 10.
  return [...DIGITS].map(Number).find((digit) => (others + weigh(digit, ordinal)) % 10 === 0)!;
}

type Pick = (alphabet: string) => string;

function aliasOf(text: string, first: number, last: number, replace: (character: string, pick: Pick) => string): string {
  const characters = [...text];
  const end = characters.length - last;
  const reveals = first + last < characters.length;
  return drawDifferent(text, (pick) =>
    characters.map((character, index) => (reveals && (index < first || index >= end) ? character : replace(character, pick))).join(""),
  );
}

/**
 * Draws until the alias differs from the value. A value with nothing to randomise (only
 * punctuation) never does; it gets a random UUID, as the original product does when an alias
 * cannot be made.
 */
function drawDifferent(value: string, draw: (pick: Pick) => string): string {
  const pick = randomPicker();
  for (let attempt = 0; attempt < DRAWS; attempt++) {
    const alias = draw(pick);
    if (alias !== value) return alias;
  }
  return crypto.randomUUID();
}

/** Uniform picks (rejection sampling over random bytes, drawn in batches). */
function randomPicker(): Pick {
  let bytes = new Uint8Array(0);
  let next = 0;
  return (alphabet) => {
    const limit = 256 - (256 % alphabet.length);
    for (;;) {
      if (next === bytes.length) {
        bytes = crypto.getRandomValues(new Uint8Array(256));
        next = 0;
      }
      const byte = bytes[next++]!;
      if (byte < limit) return alphabet[byte % alphabet.length]!;
    }
  };
}
