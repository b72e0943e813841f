import { describe, expect, it } from "vitest";
import { InvalidQueryError } from "../../src/search/errors";
import { parseQuery } from "../../src/search/parse";

/** Unit tests of the generated parser and the checks, imported directly (still inside workerd). */

const term = (key: string) => ({ kind: "term", field: "metadata", key, value: "1" });
const m = (key: string) => `metadata.${key}:1`;

function refusal(query: string): { column: number; reason: string } {
  try {
    parseQuery(query);
  } catch (error) {
    if (error instanceof InvalidQueryError) return { column: error.column, reason: error.reason };
    throw error;
  }
  throw new Error(`${query} was accepted`);
}

describe("the parser", () => {
  it("an empty or blank query has no terms", () => {
    expect(parseQuery("")).toBeNull();
    expect(parseQuery("  \t\n ")).toBeNull();
  });

  it("NOT binds tighter than AND, and AND tighter than OR", () => {
    expect(parseQuery(`${m("a")} OR ${m("b")} AND NOT ${m("c")}`)).toEqual({
      kind: "or",
      operands: [term("a"), { kind: "and", operands: [term("b"), { kind: "not", operand: term("c") }] }],
    });
    expect(parseQuery(`${m("a")} AND ${m("b")} OR ${m("c")} AND ${m("d")}`)).toEqual({
      kind: "or",
      operands: [
        { kind: "and", operands: [term("a"), term("b")] },
        { kind: "and", operands: [term("c"), term("d")] },
      ],
    });
  });

  it("a NOT b means a AND NOT b, and so do a !b and a -b", () => {
    const expected = { kind: "and", operands: [term("a"), { kind: "not", operand: term("b") }] };
    for (const query of [`${m("a")} NOT ${m("b")}`, `${m("a")} AND NOT ${m("b")}`, `${m("a")} !${m("b")}`, `${m("a")} -${m("b")}`]) {
      expect(parseQuery(query), query).toEqual(expected);
    }
  });

  it("parentheses group, and NOT applies to a whole group", () => {
    expect(parseQuery(`!(${m("a")} OR ${m("b")}) AND ${m("c")}`)).toEqual({
      kind: "and",
      operands: [{ kind: "not", operand: { kind: "or", operands: [term("a"), term("b")] } }, term("c")],
    });
  });

  it("a chain of one operator is one node; a parenthesised chain stays its own node", () => {
    expect(parseQuery(`${m("a")} OR ${m("b")} OR ${m("c")}`)).toEqual({ kind: "or", operands: [term("a"), term("b"), term("c")] });
    expect(parseQuery(`(${m("a")} OR ${m("b")}) OR ${m("c")}`)).toEqual({
      kind: "or",
      operands: [{ kind: "or", operands: [term("a"), term("b")] }, term("c")],
    });
  });

  it("a container path may end in * for its sub-containers", () => {
    expect(parseQuery("container:/a/b/*")).toEqual({ kind: "term", field: "container", value: "/a/b/", subtree: true });
    expect(parseQuery('container:"/a/b/*"')).toEqual({ kind: "term", field: "container", value: "/a/b/", subtree: true });
    expect(parseQuery("container:/a/b/")).toEqual({ kind: "term", field: "container", value: "/a/b/", subtree: false });
  });

  it("a range keeps its brackets; * is an open side", () => {
    expect(parseQuery("created_at:[2024-01-01 TO 2024-02-01}")).toEqual({
      kind: "range",
      field: "created_at",
      from: { value: "2024-01-01", inclusive: true },
      to: { value: "2024-02-01", inclusive: false },
    });
    expect(parseQuery("modified_at:{* TO 2024-02-01T10:00:00Z]")).toEqual({
      kind: "range",
      field: "modified_at",
      from: null,
      to: { value: "2024-02-01T10:00:00Z", inclusive: true },
    });
  });

  it("every refusal names the column where the query goes wrong", () => {
    expect(refusal("type:token token")).toEqual({
      column: 12,
      reason: 'expected an operator (AND, OR, NOT) or the end of the query, found "token"',
    });
    expect(refusal("type:token AND")).toEqual({ column: 15, reason: "expected a term or a group, found the end of the query" });
    expect(refusal("(type:token")).toEqual({ column: 12, reason: "expected an operator (AND, OR, NOT) or a closing parenthesis" });
    expect(refusal("type:token)")).toMatchObject({ column: 11 });
    expect(refusal("type:")).toEqual({ column: 6, reason: "expected a value after the colon (quote a value that has spaces)" });
    expect(refusal('metadata.a:"open')).toEqual({ column: 17, reason: 'expected a closing quote (")' });
    expect(refusal("type:token and type:token")).toEqual({
      column: 12,
      reason: 'expected an operator (AND, OR, NOT) or the end of the query, found "and" (operators are upper case: AND)',
    });
  });
});
