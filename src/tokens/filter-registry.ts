import type { Context, Liquid } from "liquidjs";
import { TOKENS } from "../limits";
import { aliasCard, aliasPreserveFormat, aliasPreserveLength } from "./alias-filters";
import { cardBin, cardExpiration } from "./card-filters";
import { ExpressionError } from "./errors";
import { selectJsonPath } from "./json-path";
import { cardMask, revealEnds, revealLast } from "./mask-filters";

/**
 * The vault's filters, on top of Liquid's standard ones. Arguments are checked (a wrong one is an
 * ExpressionError naming the filter, never the data), and a filter whose output can grow with an
 * argument charges that output to the render's memory limit first.
 */

const DEFAULT_MASK_CHAR = "X";
const MAX_PAD_LENGTH = TOKENS.padMaxLength;

type Filter = (this: { context: Context }, value: unknown, ...args: unknown[]) => unknown;

const FILTERS: Record<string, Filter> = {
  last4: (value) => textOf(value).slice(-4),
  reveal_last: (value, length, maskChar = DEFAULT_MASK_CHAR) =>
    revealLast(textOf(value), count("reveal_last", length), character("reveal_last", maskChar)),
  reveal: (value, first = 0, last = 0, maskChar = DEFAULT_MASK_CHAR, preserved = "") =>
    revealEnds(textOf(value), count("reveal", first), count("reveal", last), character("reveal", maskChar), characterSet(preserved)),
  card_mask: (value, revealBin = false, revealLast4 = false, maskChar = DEFAULT_MASK_CHAR, preserved = "") =>
    cardMask(
      textOf(value),
      { bin: flag("card_mask", revealBin), last4: flag("card_mask", revealLast4) },
      character("card_mask", maskChar),
      characterSet(preserved),
    ),
  card_bin: (value, separators = "") => cardBin(textOf(value), characterSet(separators)),
  card_exp: (value, format) => cardExpiration(value, textOf(format)),
  alias_preserve_format: (value, first = 0, last = 0) =>
    aliasPreserveFormat(textOf(value), count("alias_preserve_format", first), count("alias_preserve_format", last)),
  alias_preserve_length: (value, first = 0, last = 0) =>
    aliasPreserveLength(textOf(value), count("alias_preserve_length", first), count("alias_preserve_length", last)),
  alias_card: (value, revealBin = false, revealLast4 = false) =>
    aliasCard(textOf(value), { bin: flag("alias_card", revealBin), last4: flag("alias_card", revealLast4) }),
  // With one argument, replace removes the pattern, as `remove` does. Chained replaces can grow a
  // string geometrically, so the output size is charged to the render's memory limit first.
  replace: function (value, pattern, replacement = "") {
    const parts = textOf(value).split(textOf(pattern));
    const joiner = textOf(replacement);
    this.context.memoryLimit.use(parts.reduce((size, part) => size + part.length, 0) + (parts.length - 1) * joiner.length);
    return parts.join(joiner);
  },
  json: function (value, path) {
    return selectJsonPath(value, textOf(path), this.context.memoryLimit);
  },
  stringify: (value) => canonicalJson(value),
  json_stringify: (value) => (value === null || value === undefined ? null : canonicalJson(value)),
  pad_left: function (value, length, padding = " ") {
    if (value === null || value === undefined) return null;
    const size = padLength("pad_left", length);
    this.context.memoryLimit.use(size);
    return textOf(value).padStart(size, padCharacters("pad_left", padding));
  },
  pad_right: function (value, length, padding = " ") {
    if (value === null || value === undefined) return null;
    const size = padLength("pad_right", length);
    this.context.memoryLimit.use(size);
    return textOf(value).padEnd(size, padCharacters("pad_right", padding));
  },
  to_boolean: (value) => toBoolean(value),
  to_number: (value) => toNumber(value),
  to_string: (value) => toText(value),
};

export function registerFilters(engine: Liquid): void {
  for (const [name, filter] of Object.entries(FILTERS)) engine.registerFilter(name, filter);
}

/** How a value reads inside text: objects and arrays as canonical JSON, null and missing as nothing. */
export function textOf(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return canonicalJson(value);
  return String(value);
}

/** JSON with object keys sorted, so equal data stringifies (and fingerprints) equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) =>
    member !== null && typeof member === "object" && !Array.isArray(member)
      ? Object.fromEntries(Object.entries(member).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : member,
  );
}

function toBoolean(value: unknown): boolean | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value !== 0;
  if (typeof value === "string") {
    const word = value.trim().toLowerCase();
    if (word === "true" || word === "false") return word === "true";
  }
  throw new ExpressionError("to_boolean needs a boolean, a number or the text true or false");
}

const NUMERIC_TEXT = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

function toNumber(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const number = typeof value === "number" ? value : typeof value === "string" && NUMERIC_TEXT.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(number)) throw new ExpressionError("to_number needs a number or numeric text");
  return number;
}

function toText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "object") throw new ExpressionError("to_string cannot convert an object or array (json_stringify can)");
  return String(value);
}

function count(filter: string, value: unknown): number {
  const number = Number(value);
  if (value === null || value === "" || !Number.isInteger(number) || number < 0) {
    throw new ExpressionError(`${filter} needs a count of zero or more characters`);
  }
  return number;
}

function character(filter: string, value: unknown): string {
  const text = textOf(value);
  if ([...text].length !== 1) throw new ExpressionError(`${filter} needs a mask character of exactly one character`);
  return text;
}

/** Booleans arrive as Liquid's true and false or, as the original product documents them, as 'true' and 'false'. */
function flag(filter: string, value: unknown): boolean {
  if (typeof value === "boolean") return value;
  if (value === "true" || value === "false") return value === "true";
  throw new ExpressionError(`${filter} needs true or false for what it reveals`);
}

function characterSet(value: unknown): ReadonlySet<string> {
  return new Set(textOf(value));
}

function padLength(filter: string, value: unknown): number {
  const length = Number(value);
  if (!Number.isInteger(length) || length < 0 || length > MAX_PAD_LENGTH) {
    throw new ExpressionError(`${filter} needs a length between 0 and ${MAX_PAD_LENGTH}`);
  }
  return length;
}

function padCharacters(filter: string, value: unknown): string {
  const padding = textOf(value);
  if (padding.length === 0) throw new ExpressionError(`${filter} needs a non-empty padding`);
  return padding;
}
