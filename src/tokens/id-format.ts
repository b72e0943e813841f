import { TOKENS } from "../limits";
import { ExpressionError } from "./errors";
import { evaluateExpression, type WorkBudget } from "./expressions";

/**
 * Token ids. The vault gives a token a random UUID; a client may choose its own id (or an alias
 * expression that renders one) when it creates the token. Ids are unique within a tenant.
 *
 * A chosen id is 3 to 400 characters, without the characters that would make it ambiguous in a
 * URL path or inside a detokenization expression `{{ <id> | filter }}`, without control characters,
 * and without leading or trailing white space (an expression's id is read trimmed).
 */
export const TOKEN_ID_MIN_LENGTH = TOKENS.idMinLength;
export const TOKEN_ID_MAX_LENGTH = TOKENS.idMaxLength;
export const TOKEN_ID_FORBIDDEN = "#/\\+?[]|&=%<>{}^";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Why the text cannot be a token id, or null when it can. */
export function tokenIdProblem(id: string): string | null {
  if (id.length < TOKEN_ID_MIN_LENGTH || id.length > TOKEN_ID_MAX_LENGTH) {
    return `must be ${TOKEN_ID_MIN_LENGTH} to ${TOKEN_ID_MAX_LENGTH} characters`;
  }
  if (id.trim() !== id) return "must not start or end with white space";
  if (CONTROL.test(id)) return "must not hold control characters";
  const forbidden = [...new Set([...id].filter((character) => TOKEN_ID_FORBIDDEN.includes(character)))];
  if (forbidden.length > 0) return `must not hold any of ${TOKEN_ID_FORBIDDEN} (found ${forbidden.join(" ")})`;
  return null;
}

/**
 * A chosen id holding `{{` or `{%` is an alias expression, rendered over the token's data; a
 * literal id cannot hold braces, so the two never overlap.
 */
export function isAliasExpression(id: string): boolean {
  return id.includes("{{") || id.includes("{%");
}

/**
 * The stored form of an id: UUIDs are compared case-insensitively (stored lower case), chosen ids
 * exactly as given.
 */
export function normalTokenId(id: string): string {
  return UUID.test(id) ? id.toLowerCase() : id;
}

/** The id an alias expression renders for the token's data, or why that cannot be a token id. */
export function renderAliasId(source: string, data: unknown, work?: WorkBudget): { id: string } | { problem: string } {
  let rendered: string;
  try {
    rendered = evaluateExpression(source, { data }, work);
  } catch (error) {
    if (!(error instanceof ExpressionError)) throw error;
    return { problem: error.message };
  }
  // The rendered id is not quoted: an alias may reveal parts of the data.
  const problem = tokenIdProblem(rendered);
  return problem ? { problem: `the rendered id ${problem}` } : { id: normalTokenId(rendered) };
}
