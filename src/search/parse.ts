import type { Query } from "./ast";
import { checkQuery, QUERY_LIMITS } from "./check";
import { InvalidQueryError } from "./errors";
import { type Expectation, SyntaxError as PeggySyntaxError, parse } from "./parser.generated.js";

const LOWER_CASE_OPERATORS = new Set(["and", "or", "not"]);

/**
 * Parses and checks a search query: the AST, or null for a query with no terms (every token).
 * Anything else is an InvalidQueryError naming the column and what was expected there.
 */
export function parseQuery(text: string): Query | null {
  if (text.length > QUERY_LIMITS.characters) {
    throw new InvalidQueryError(QUERY_LIMITS.characters + 1, `a query is at most ${QUERY_LIMITS.characters} characters long`);
  }
  let syntax: ReturnType<typeof parse>;
  try {
    syntax = parse(text, { maxDepth: QUERY_LIMITS.depth });
  } catch (error) {
    if (error instanceof PeggySyntaxError) throw invalidQueryOf(error, text);
    throw error;
  }
  return syntax === null ? null : checkQuery(syntax);
}

/** Errors raised by the grammar carry their own message; the parser's own failures list what would have fitted. */
function invalidQueryOf(error: PeggySyntaxError, text: string): InvalidQueryError {
  const offset = error.location.start.offset;
  if (error.expected === null) return new InvalidQueryError(offset + 1, error.message);
  return new InvalidQueryError(offset + 1, `expected ${describeExpected(error.expected)}, found ${describeFound(text, offset)}`);
}

function describeExpected(expected: Expectation[]): string {
  const descriptions = [...new Set(expected.map(describeExpectation))];
  // NOT may stand almost anywhere; naming it next to the real expectation only adds noise.
  const relevant = descriptions.length > 1 ? descriptions.filter((description) => description !== "NOT") : descriptions;
  return relevant.length === 1 ? relevant[0]! : `${relevant.slice(0, -1).join(", ")} or ${relevant.at(-1)}`;
}

function describeExpectation(expectation: Expectation): string {
  switch (expectation.type) {
    case "other":
      return expectation.description;
    case "literal":
      return JSON.stringify(expectation.text);
    case "end":
      return "the end of the query";
    case "any":
      return "a character";
    case "class":
      return `one of ${expectation.parts.map((part) => (typeof part === "string" ? part : part.join("-"))).join(" ")}`;
  }
}

/** The word where parsing stopped, so the message shows what was written rather than one character. */
function describeFound(text: string, offset: number): string {
  if (offset >= text.length) return "the end of the query";
  const word = /^[^\s()]+/.exec(text.slice(offset))?.[0] ?? text.charAt(offset);
  const shown = JSON.stringify(word.length > 24 ? `${word.slice(0, 24)}…` : word);
  return LOWER_CASE_OPERATORS.has(word) ? `${shown} (operators are upper case: ${word.toUpperCase()})` : shown;
}
