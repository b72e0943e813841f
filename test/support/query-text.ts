import fc from "fast-check";
import type { Query } from "../../src/search/ast";
import { TOKEN_TYPES } from "../../src/tokens/types";

/*
 * The inverse of the parser, for the round-trip property: a query AST printed as query text, and
 * random ASTs to print. Every way of writing the same query should parse back to the same AST.
 */

export interface PrintStyle {
  /** Values: always in quotes, or never (every other character escaped), or quoted only when needed. */
  quoting: "always" | "never" | "when-needed";
  negation: "NOT" | "!" | "-";
  /** Writes `a AND NOT b` as `a NOT b`. */
  implicitAndNot: boolean;
}

export const PLAIN_STYLE: PrintStyle = { quoting: "when-needed", negation: "NOT", implicitAndNot: false };

export function printQuery(query: Query, style: PrintStyle = PLAIN_STYLE): string {
  const print = (node: Query): string => printQuery(node, style);
  const operand = (node: Query) => (node.kind === "and" || node.kind === "or" ? `(${print(node)})` : print(node));
  switch (query.kind) {
    case "term":
      switch (query.field) {
        case "container":
          return `container:${escapeAll(query.value)}${query.subtree ? "*" : ""}`;
        case "metadata":
          return `metadata.${escapeAll(query.key)}:${printValue(query.value, style)}`;
        default:
          return `${query.field}:${printValue(query.value, style)}`;
      }
    case "range": {
      const from = query.from ? `${query.from.inclusive ? "[" : "{"}${printValue(query.from.value, style)}` : "[*";
      const to = query.to ? `${printValue(query.to.value, style)}${query.to.inclusive ? "]" : "}"}` : "*]";
      return `${query.field}:${from} TO ${to}`;
    }
    case "not":
      return `${style.negation}${style.negation === "NOT" ? " " : ""}${operand(query.operand)}`;
    case "or":
      return query.operands.map(operand).join(" OR ");
    case "and":
      return query.operands
        .map((node, i) =>
          i > 0 && style.implicitAndNot && node.kind === "not" ? `NOT ${operand(node.operand)}` : `${i > 0 ? "AND " : ""}${operand(node)}`,
        )
        .join(" ");
  }
}

function printValue(text: string, style: PrintStyle): string {
  const quoted = `"${text.replace(/[\\"*?]/g, "\\$&")}"`;
  switch (style.quoting) {
    case "always":
      return quoted;
    case "never":
      return escapeAll(text);
    case "when-needed":
      return /^[A-Za-z0-9_.@-]+$/.test(text) ? text : quoted;
  }
}

/** A backslash before every character that is not a letter or digit: always read literally. */
function escapeAll(text: string): string {
  return text.replace(/[^A-Za-z0-9]/g, "\\$&");
}

const value = fc.string({ minLength: 1, maxLength: 8, unit: "binary" });
const segment = fc.stringMatching(/^[A-Za-z0-9_-]{1,6}$/);
const containerPath = fc.array(segment, { minLength: 1, maxLength: 3 }).map((segments) => `/${segments.join("/")}/`);

const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const date = fc
  .record({
    at: fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T23:59:59Z"), noInvalidDate: true }),
    precision: fc.constantFrom("day", "minute", "second", "millisecond"),
    zone: fc.boolean(),
  })
  .map(({ at, precision, zone }) => {
    const day = `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())}`;
    if (precision === "day") return day;
    const minute = `${day}T${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}`;
    const time =
      precision === "minute"
        ? minute
        : precision === "second"
          ? `${minute}:${pad(at.getUTCSeconds())}`
          : `${minute}:${pad(at.getUTCSeconds())}.${pad(at.getUTCMilliseconds(), 3)}`;
    return zone ? `${time}Z` : time;
  });

const dateField = fc.constantFrom("created_at" as const, "modified_at" as const);
const bound = fc.option(fc.record({ value: date, inclusive: fc.boolean() }), { nil: null });

const term: fc.Arbitrary<Query> = fc.oneof(
  fc.record({
    kind: fc.constant("term" as const),
    field: fc.constantFrom("id" as const, "fingerprint" as const, "created_by" as const, "modified_by" as const, "data" as const),
    value,
  }),
  fc.record({ kind: fc.constant("term" as const), field: fc.constant("type" as const), value: fc.constantFrom(...TOKEN_TYPES) }),
  fc.record({ kind: fc.constant("term" as const), field: fc.constant("metadata" as const), key: value, value }),
  fc.oneof(
    fc.record({
      kind: fc.constant("term" as const),
      field: fc.constant("container" as const),
      value: containerPath,
      subtree: fc.boolean(),
    }),
    fc.constant({ kind: "term" as const, field: "container" as const, value: "/", subtree: true }),
  ),
  fc.record({ kind: fc.constant("term" as const), field: dateField, value: date }),
  fc.record({ kind: fc.constant("range" as const), field: dateField, from: bound, to: bound }),
);

/** Random checked queries, small enough for the limits (100 terms, 20 levels, 4,096 characters) in most draws. */
export const queryArbitrary: fc.Arbitrary<Query> = fc.letrec<{ query: Query }>((tie) => ({
  query: fc.oneof(
    { maxDepth: 4, depthSize: "small", withCrossShrink: true },
    term,
    fc.record({ kind: fc.constant("not" as const), operand: tie("query") }),
    fc.record({ kind: fc.constantFrom("and" as const, "or" as const), operands: fc.array(tie("query"), { minLength: 2, maxLength: 3 }) }),
  ),
})).query;

export const printStyleArbitrary: fc.Arbitrary<PrintStyle> = fc.record({
  quoting: fc.constantFrom("always" as const, "never" as const, "when-needed" as const),
  negation: fc.constantFrom("NOT" as const, "!" as const, "-" as const),
  implicitAndNot: fc.boolean(),
});
