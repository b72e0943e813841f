import { SEARCH } from "../limits";
import { CONTAINER_MAX_LENGTH, CONTAINER_PATTERN } from "../tokens/containers";
import { TOKEN_TYPES } from "../tokens/types";
import { type Bound, DATE_FIELDS, EXACT_FIELDS, isDateField, isExactField, type Query, type Term } from "./ast";
import { timeSpanOf } from "./dates";
import { InvalidQueryError } from "./errors";
import type { SyntaxBound, SyntaxNode, SyntaxRange, SyntaxTerm, SyntaxValue } from "./syntax";

/** Limits against abuse; the parser enforces the depth of parentheses too, before it can recurse deeper. */
export const QUERY_LIMITS = { characters: SEARCH.queryMaxCharacters, terms: SEARCH.queryMaxTerms, depth: SEARCH.queryMaxDepth } as const;

const METADATA_PREFIX = "metadata.";
const SEARCHABLE_FIELDS = [...EXACT_FIELDS, "data", "container", `${METADATA_PREFIX}<key>`, ...DATE_FIELDS].join(", ");
const WILDCARDS_NOT_HERE = "wildcards (* and ?) are only supported at the end of a container path, as in container:/a/*";
const NOT_A_DATE = "is not an ISO 8601 date (2024-05-01) or UTC date-time (2024-05-01T10:30:00Z)";

/**
 * Checks every field and value of a parsed query and builds the typed AST: a 400 naming the column
 * for an unknown field, a value that field cannot hold, or a query beyond the limits. Parentheses
 * vanish; each group and each NOT is one level of nesting.
 */
export function checkQuery(syntax: SyntaxNode): Query {
  let terms = 0;
  const countTerm = (column: number) => {
    terms += 1;
    if (terms > QUERY_LIMITS.terms) throw new InvalidQueryError(column, `a query has at most ${QUERY_LIMITS.terms} terms`);
  };
  const nest = (column: number, depth: number) => {
    if (depth > QUERY_LIMITS.depth) {
      throw new InvalidQueryError(column, `nesting (parentheses and NOT) is limited to ${QUERY_LIMITS.depth} levels`);
    }
  };
  const visit = (node: SyntaxNode, depth: number): Query => {
    switch (node.kind) {
      case "group":
        nest(node.column, depth + 1);
        return visit(node.query, depth + 1);
      case "not":
        nest(node.column, depth + 1);
        return { kind: "not", operand: visit(node.operand, depth + 1) };
      case "and":
      case "or":
        return { kind: node.kind, operands: node.operands.map((operand) => visit(operand, depth)) };
      case "term":
        countTerm(node.column);
        return termOf(node);
      case "range":
        countTerm(node.column);
        return rangeOf(node);
    }
  };
  return visit(syntax, 0);
}

function termOf(node: SyntaxTerm): Term {
  const { field, value } = node;
  if (field === "container") return containerTermOf(value);
  if (field === "data") return { kind: "term", field, value: plainValueOf(value, "wildcard search of data is not supported") };
  if (field === "metadata" || field.startsWith(METADATA_PREFIX)) {
    const key = field.slice(METADATA_PREFIX.length);
    if (!key) throw new InvalidQueryError(node.column, "metadata needs a key, as in metadata.customer:42");
    return { kind: "term", field: "metadata", key, value: plainValueOf(value) };
  }
  if (isDateField(field)) return { kind: "term", field, value: dateOf(value) };
  if (!isExactField(field)) throw unknownField(node);
  const text = plainValueOf(value);
  if (field === "type" && !(TOKEN_TYPES as readonly string[]).includes(text)) {
    throw new InvalidQueryError(value.column, `unknown token type ${JSON.stringify(text)}: the types are ${TOKEN_TYPES.join(", ")}`);
  }
  return { kind: "term", field, value: text };
}

function rangeOf(node: SyntaxRange): Query {
  if (!isDateField(node.field)) {
    if (isKnownField(node.field)) {
      throw new InvalidQueryError(node.column, `ranges are only supported on ${DATE_FIELDS.join(" and ")}`);
    }
    throw unknownField(node);
  }
  return { kind: "range", field: node.field, from: boundOf(node.from), to: boundOf(node.to) };
}

function boundOf(bound: SyntaxBound | null): Bound | null {
  return bound && { value: dateOf(bound.value), inclusive: bound.inclusive };
}

function dateOf(value: SyntaxValue): string {
  const text = plainValueOf(value);
  if (!timeSpanOf(text)) throw new InvalidQueryError(value.column, `${JSON.stringify(text)} ${NOT_A_DATE}`);
  return text;
}

/** A value matched literally: not empty, no wildcards, no Lucene regular expression. */
function plainValueOf(value: SyntaxValue, wildcardProblem = WILDCARDS_NOT_HERE): string {
  const [wildcard] = value.wildcards;
  if (wildcard) throw new InvalidQueryError(wildcard.column, wildcardProblem);
  if (!value.quoted && value.raw.length > 1 && value.raw.startsWith("/") && value.raw.endsWith("/")) {
    throw new InvalidQueryError(value.column, "regular expressions (/.../) are not supported; quote the value to search for it literally");
  }
  if (!value.text) throw new InvalidQueryError(value.column, "the value is empty");
  return value.text;
}

/** `container:/a/b/` exactly, or `container:/a/*` for /a/ and everything below it. */
function containerTermOf(value: SyntaxValue): Term {
  const { text, wildcards } = value;
  const subtree = wildcards.length > 0;
  for (const wildcard of wildcards) {
    if (text[wildcard.index] === "?") throw new InvalidQueryError(wildcard.column, WILDCARDS_NOT_HERE);
    if (wildcard.index !== text.length - 1) {
      throw new InvalidQueryError(wildcard.column, "* is only allowed at the end of a container path, as in /a/*");
    }
    if (!text.endsWith("/*")) throw new InvalidQueryError(wildcard.column, "* must follow a /, as in /a/*");
  }
  const path = subtree ? text.slice(0, -1) : text;
  const valid = (subtree && path === "/") || (path.length <= CONTAINER_MAX_LENGTH && CONTAINER_PATTERN.test(path));
  if (!valid) {
    throw new InvalidQueryError(
      value.column,
      `${JSON.stringify(text)} is not a container path like /segment/segment/ (letters, digits, _ and -), optionally ending in *`,
    );
  }
  return { kind: "term", field: "container", value: path, subtree };
}

function isKnownField(field: string): boolean {
  return isExactField(field) || isDateField(field) || field === "data" || field === "container" || field.startsWith(METADATA_PREFIX);
}

function unknownField(node: SyntaxTerm | SyntaxRange): InvalidQueryError {
  return new InvalidQueryError(node.column, `unknown field ${JSON.stringify(node.field)}: the searchable fields are ${SEARCHABLE_FIELDS}`);
}
