import { binLength } from "./card-filters";

/**
 * Mask filters show part of a value and write a mask character over the rest. A mask never shows
 * the whole value: when what it would reveal covers every character it could hide, it hides them
 * all instead, and when the result would still read like the value, every character is masked.
 */

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** `reveal_last`: keeps the last `count` letters and digits and masks the others; separators stay. */
export function revealLast(text: string, count: number, maskChar: string): string {
  const characters = [...text];
  const hideable = characters.map((character) => LETTER_OR_DIGIT.test(character));
  const total = hideable.filter(Boolean).length;
  let ordinal = 0;
  const revealed = hideable.map((canHide) => canHide && ordinal++ >= total - count);
  return applyMask(characters, hideable, revealed, maskChar);
}

/**
 * `reveal`: keeps the first `first` and the last `last` characters and masks the others, as the
 * original filters page does: every character counts, and separators are masked unless named in
 * `preserved`, which stay wherever they are.
 */
export function revealEnds(text: string, first: number, last: number, maskChar: string, preserved: ReadonlySet<string>): string {
  const characters = [...text];
  const hideable = characters.map((character) => !preserved.has(character));
  const revealed = characters.map((_, position) => position < first || position >= characters.length - last);
  return applyMask(characters, hideable, revealed, maskChar);
}

/**
 * `card_mask`: masks a card number, optionally keeping its BIN and last four digits. Characters
 * in `preserved` (separators) stay and do not count as digits.
 */
export function cardMask(
  number: string,
  reveal: { bin: boolean; last4: boolean },
  maskChar: string,
  preserved: ReadonlySet<string>,
): string {
  const characters = [...number];
  const hideable = characters.map((character) => !preserved.has(character));
  const digits = hideable.filter(Boolean).length;
  const bin = binLength(digits);
  let ordinal = 0;
  const revealed = hideable.map((canHide) => {
    if (!canHide) return false;
    const position = ordinal++;
    return (reveal.bin && position < bin) || (reveal.last4 && position >= digits - 4);
  });
  return applyMask(characters, hideable, revealed, maskChar);
}

function applyMask(characters: string[], hideable: boolean[], revealed: boolean[], maskChar: string): string {
  const showsEverything = hideable.every((canHide, index) => !canHide || revealed[index]);
  const masked = characters
    .map((character, index) => (hideable[index] && (showsEverything || !revealed[index]) ? maskChar : character))
    .join("");
  return masked === characters.join("") ? maskChar.repeat(characters.length) : masked;
}
