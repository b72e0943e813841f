import type { ProblemError } from "../errors";
import { jsonDepthOf, MAX_JSON_DEPTH, utf8TextOf } from "../http/body";

/** The body types the vault reads as structured data: detokenized per value, and given to transforms. */
export const STRUCTURED_MEDIA_TYPES = ["application/json", "application/x-www-form-urlencoded"] as const;
export type StructuredMediaType = (typeof STRUCTURED_MEDIA_TYPES)[number];

export function structuredMediaTypeOf(contentType: string | null): StructuredMediaType | null {
  const mediaType = contentType?.split(";", 1)[0]?.trim().toLowerCase();
  return STRUCTURED_MEDIA_TYPES.find((type) => type === mediaType) ?? null;
}

const OPEN_BRACE = 0x7b;
/** In a form, either brace of `{{` may be percent-encoded. */
const FORM_REFERENCE_START = /(?:\{|%7b){2}/i;

/**
 * A cheap scan of the raw bytes: a body without `{{` holds no reference and is forwarded untouched,
 * byte for byte.
 */
export function mightHoldReferences(bytes: Uint8Array, mediaType: StructuredMediaType | null): boolean {
  if (mediaType === "application/x-www-form-urlencoded") return FORM_REFERENCE_START.test(lenientUtf8.decode(bytes));
  for (let at = bytes.indexOf(OPEN_BRACE); at !== -1; at = bytes.indexOf(OPEN_BRACE, at + 1)) {
    if (bytes[at + 1] === OPEN_BRACE) return true;
  }
  return false;
}

/** Replaces invalid sequences instead of failing: enough to look for ASCII in any bytes. */
const lenientUtf8 = new TextDecoder();

/**
 * Parses a JSON or form body; an empty body is null. The bytes must be UTF-8, and JSON may nest
 * at most MAX_JSON_DEPTH levels, so no walker of the result can run out of stack. `refuse` makes
 * the error from what is wrong ("is not valid JSON …", never quoting the body): the caller's fault
 * for a request, the destination's for a response.
 */
export function parseStructured(type: StructuredMediaType, bytes: Uint8Array, refuse: (reason: string) => ProblemError): unknown {
  const text = utf8TextOf(bytes);
  if (text === null) throw refuse(`is not valid UTF-8, as ${type} must be`);
  if (text.trim() === "") return null;
  if (type === "application/x-www-form-urlencoded") return formObjectOf(new URLSearchParams(text));
  if (jsonDepthOf(bytes) > MAX_JSON_DEPTH) throw refuse(`must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (error) {
    // The parser's message may quote the text around the fault: it says only where it is.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    throw refuse(position === undefined ? "is not valid JSON" : `is not valid JSON (at character ${position})`);
  }
}

/** A form as an object: a repeated name becomes an array of its values. */
function formObjectOf(params: URLSearchParams): Record<string, string | string[]> {
  const values = new Map<string, string[]>();
  for (const [name, value] of params) values.set(name, [...(values.get(name) ?? []), value]);
  return Object.fromEntries([...values].map(([name, list]) => [name, list.length === 1 ? list[0]! : list]));
}

/**
 * Serialises a body in the type it arrived in; null is no body. In a form, arrays repeat the name
 * and nested objects use bracket names (`card[number]=…`), the convention payment APIs expect.
 * `refuse` makes the error for a form body that is not an object.
 */
export function serialiseStructured(type: StructuredMediaType, value: unknown, refuse: (reason: string) => ProblemError): string | null {
  if (value === null || value === undefined) return null;
  if (type === "application/json") return JSON.stringify(value);
  if (typeof value !== "object" || Array.isArray(value)) throw refuse("a form body must be an object");
  const params = new URLSearchParams();
  for (const [name, item] of Object.entries(value)) appendFormValue(params, name, item);
  return params.toString();
}

function appendFormValue(params: URLSearchParams, name: string, value: unknown): void {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      appendFormValue(params, item !== null && typeof item === "object" ? `${name}[${index}]` : name, item);
    }
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) appendFormValue(params, `${name}[${key}]`, item);
  } else {
    params.append(name, value === null || value === undefined ? "" : String(value));
  }
}
