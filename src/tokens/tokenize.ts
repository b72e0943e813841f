import { ValidationError } from "../errors";
import { MAX_JSON_DEPTH } from "../http/body";
import { TOKENS } from "../limits";

/*
 * A tokenize payload is any JSON: each object with `type` and `data` is a token create request,
 * every other primitive leaf a `token`-type token. These functions find those places and put the
 * answers back into a copy of the payload: a leaf's token id, or a request's token object.
 */

export const MAX_TOKENS_PER_TOKENIZE = TOKENS.maxPerTokenize;

export type JsonPath = (string | number)[];

export interface TokenRequestAt {
  path: JsonPath;
  /** A create request to validate, or a primitive leaf to store as a `token`. */
  request: unknown;
  /** A primitive leaf: its place in the answer holds the new token's id, not the token. */
  leaf: boolean;
}

/** Null leaves stay as they are: there is nothing in them to protect. */
export function findTokenRequests(payload: unknown): TokenRequestAt[] {
  const found: TokenRequestAt[] = [];
  const visit = (value: unknown, path: JsonPath) => {
    if (path.length > MAX_JSON_DEPTH)
      throw ValidationError.field(jsonPath(path), `nesting deeper than ${MAX_JSON_DEPTH} levels is not supported`);
    if (value === null) return;
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) visit(item, [...path, index]);
    } else if (typeof value === "object") {
      if (isTokenRequest(value)) found.push({ path, request: value, leaf: false });
      else for (const [key, member] of Object.entries(value)) visit(member, [...path, key]);
    } else {
      found.push({ path, request: { type: "token", data: value }, leaf: true });
    }
    if (found.length > MAX_TOKENS_PER_TOKENIZE) {
      throw ValidationError.field("body", `must hold at most ${MAX_TOKENS_PER_TOKENIZE} values to tokenize`);
    }
  };
  visit(payload, []);
  return found;
}

function isTokenRequest(value: object): boolean {
  return Object.hasOwn(value, "type") && Object.hasOwn(value, "data");
}

/** A copy of the payload with the value at each path replaced by its token. */
export function substituteTokens(payload: unknown, replacements: { path: JsonPath; token: unknown }[]): unknown {
  if (replacements.length === 1 && replacements[0]!.path.length === 0) return replacements[0]!.token;
  const copy = structuredClone(payload) as Record<string | number, unknown>;
  for (const { path, token } of replacements) {
    let parent = copy;
    for (const segment of path.slice(0, -1)) parent = parent[segment] as Record<string | number, unknown>;
    parent[path.at(-1)!] = token;
  }
  return copy;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `$.cards[0].data`, with members that are not identifiers quoted: `$["card number"]`. */
export function jsonPath(path: readonly PropertyKey[]): string {
  let text = "$";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (IDENTIFIER.test(String(segment))) text += `.${String(segment)}`;
    else text += `[${JSON.stringify(String(segment))}]`;
  }
  return text;
}
