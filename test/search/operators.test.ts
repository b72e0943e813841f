import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds, sorted } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Rule 1: terms combined with AND, OR, NOT and grouped with parentheses. */

type Flags = { a: boolean; b: boolean; c: boolean };

let key: string;
/** One token for each combination of the metadata entries a:1, b:1 and c:1. */
const tokens: { id: string; flags: Flags }[] = [];

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  for (let combination = 0; combination < 8; combination++) {
    const flags = { a: (combination & 1) > 0, b: (combination & 2) > 0, c: (combination & 4) > 0 };
    const metadata = Object.fromEntries(Object.entries(flags).map(([name, set]) => [name, set ? "1" : "0"]));
    const token = await createToken(key, { type: "token", data: `combination ${combination}`, metadata });
    tokens.push({ id: token.id, flags });
  }
});

const A = "metadata.a:1";
const B = "metadata.b:1";
const C = "metadata.c:1";

async function expectMatches(query: string, predicate: (flags: Flags) => boolean) {
  const expected = tokens.filter((token) => predicate(token.flags)).map((token) => token.id);
  expect(sorted(await searchIds(key, query)), query).toEqual(sorted(expected));
}

describe("query syntax: operators", () => {
  it("AND matches tokens that match both terms", async () => {
    await expectMatches(`${A} AND ${B}`, (t) => t.a && t.b);
  });

  it("OR matches tokens that match either term", async () => {
    await expectMatches(`${A} OR ${B}`, (t) => t.a || t.b);
  });

  it("NOT matches tokens that do not match the term", async () => {
    await expectMatches(`NOT ${A}`, (t) => !t.a);
  });

  it("NOT is also written ! or - before a term or a group", async () => {
    await expectMatches(`!${A}`, (t) => !t.a);
    await expectMatches(`-${A}`, (t) => !t.a);
    await expectMatches(`-(${A} OR ${B})`, (t) => !(t.a || t.b));
  });

  it("a NOT b means a AND NOT b", async () => {
    await expectMatches(`${A} NOT ${B}`, (t) => t.a && !t.b);
    await expectMatches(`${A} -${B}`, (t) => t.a && !t.b);
  });

  it("NOT binds tighter than AND, and AND tighter than OR", async () => {
    await expectMatches(`${A} OR ${B} AND ${C}`, (t) => t.a || (t.b && t.c));
    await expectMatches(`${A} AND ${B} OR ${C}`, (t) => (t.a && t.b) || t.c);
    await expectMatches(`NOT ${A} AND ${B}`, (t) => !t.a && t.b);
    await expectMatches(`NOT ${A} OR ${B}`, (t) => !t.a || t.b);
    await expectMatches(`${A} OR NOT ${B} AND ${C}`, (t) => t.a || (!t.b && t.c));
  });

  it("parentheses group terms against precedence, to any depth", async () => {
    await expectMatches(`(${A} OR ${B}) AND ${C}`, (t) => (t.a || t.b) && t.c);
    await expectMatches(`${A} AND NOT (${B} OR NOT (${C}))`, (t) => t.a && !(t.b || !t.c));
  });

  it("operators are case sensitive: and is a value, not an operator", async () => {
    const { key: own } = await seedTokenTenant();
    const conjunction = await createToken(own, { type: "token", data: "x", metadata: { word: "and" } });
    expect(await searchIds(own, "metadata.word:and")).toEqual([conjunction.id]);
    const { message } = await refusedQuery(key, `${A} and ${B}`);
    expect(message).toBe(
      'column 14: expected an operator (AND, OR, NOT) or the end of the query, found "and" (operators are upper case: AND)',
    );
  });

  it("two terms with no operator between them are a 400 that says an operator is expected", async () => {
    const { message } = await refusedQuery(key, `${A} ${B}`);
    expect(message).toBe('column 14: expected an operator (AND, OR, NOT) or the end of the query, found "metadata.b:1"');
  });

  it("an operator without a term after it, or an unclosed parenthesis, is a 400 at that column", async () => {
    expect((await refusedQuery(key, `${A} AND`)).message).toBe("column 17: expected a term or a group, found the end of the query");
    expect((await refusedQuery(key, `${A} OR OR ${B}`)).message).toBe("column 17: expected a term, found the operator OR");
    expect((await refusedQuery(key, `(${A} OR ${B}`)).message).toBe(
      "column 30: expected an operator (AND, OR, NOT) or a closing parenthesis",
    );
    expect((await refusedQuery(key, `${A})`)).message).toBe(
      'column 13: expected an operator (AND, OR, NOT) or the end of the query, found ")"',
    );
    expect((await refusedQuery(key, "()")).message).toBe("column 2: expected a term or a group inside the parentheses");
  });
});
