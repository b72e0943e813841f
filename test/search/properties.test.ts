import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { InvalidQueryError } from "../../src/search/errors";
import { parseQuery } from "../../src/search/parse";
import { printQuery, printStyleArbitrary, queryArbitrary } from "../support/query-text";
import { search } from "../support/search";
import { createToken, SSN, seedTokenTenant } from "../support/tokens";

/** Robustness: random queries, texts and token sequences. */

/** Hundreds of HTTP calls per property: far beyond the default 5 s on a busy machine. */
const HTTP_PROPERTY_TIMEOUT_MS = 120_000;

let key: string;

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  await createToken(key, { type: "social_security_number", data: SSN, metadata: { a: "b" }, containers: ["/a/"] });
  await createToken(key, { type: "token", data: "x y", search_indexes: ["{{ data }}"], containers: ["/a/b/"] });
});

/** Fragments of the query language, valid and invalid, to string together at random. */
const FRAGMENTS = [
  "AND",
  "OR",
  "NOT",
  "and",
  "(",
  ")",
  "!",
  "-",
  "+",
  "&&",
  "||",
  "\\",
  '"',
  ":",
  "*",
  "?",
  "~",
  "^",
  "[",
  "]",
  "{",
  "}",
  "TO",
  "type:token",
  "type:nope",
  "id:1b4e28ba-2fa1-11d2-883f-0016d3cca427",
  "metadata.a:b",
  "metadata.:b",
  "metadata.a:",
  "data:6789",
  'data:"x y"',
  "data:67*",
  "container:/a/",
  "container:/a/*",
  "container:/a*",
  'container:"/a/b/*"',
  "created_at:2024-05-01",
  "created_at:[2024-01-01 TO *]",
  "modified_at:{* TO 2024-02-30}",
  "created_at:[",
  "fingerprint:abc",
  "name:x",
  "x",
  '"x"',
  "/re/",
  "2024-01-01T10:00:00Z",
];
const fragmentSequence = fc
  .array(fc.record({ fragment: fc.constantFrom(...FRAGMENTS), separator: fc.constantFrom(" ", "", "  ") }), { maxLength: 12 })
  .map((parts) => parts.map((part) => part.fragment + part.separator).join(""));

describe("search properties", () => {
  it("a random query printed as text parses back to the same query, however it is written", () => {
    fc.assert(
      fc.property(queryArbitrary, printStyleArbitrary, (query, style) => {
        const text = printQuery(query, style);
        fc.pre(text.length <= 4096);
        expect(parseQuery(text)).toEqual(query);
      }),
      { numRuns: 1000 },
    );
  });

  it("any text either parses or is refused with a column, never with another error", () => {
    const textOrFragments = fc.oneof(fc.string({ maxLength: 80, unit: "binary" }), fc.string({ maxLength: 80 }), fragmentSequence);
    fc.assert(
      fc.property(textOrFragments, (text) => {
        try {
          parseQuery(text);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidQueryError);
          expect((error as InvalidQueryError).column).toBeGreaterThanOrEqual(1);
          expect((error as InvalidQueryError).column).toBeLessThanOrEqual(text.length + 1);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it(
    "random strings never produce a 5xx",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.string({ maxLength: 60, unit: "binary" }), fc.string({ maxLength: 60 })), async (text) => {
          const reply = await search(key, text);
          expect([200, 400], `${JSON.stringify(text)} → ${JSON.stringify(reply.body)}`).toContain(reply.status);
        }),
        { numRuns: 150 },
      );
    },
    HTTP_PROPERTY_TIMEOUT_MS,
  );

  it(
    "random sequences of query tokens never produce a 5xx",
    async () => {
      await fc.assert(
        fc.asyncProperty(fragmentSequence, async (text) => {
          const reply = await search(key, text);
          expect([200, 400], `${JSON.stringify(text)} → ${JSON.stringify(reply.body)}`).toContain(reply.status);
        }),
        { numRuns: 300 },
      );
    },
    HTTP_PROPERTY_TIMEOUT_MS,
  );

  it(
    "random valid queries run without error",
    async () => {
      await fc.assert(
        fc.asyncProperty(queryArbitrary, printStyleArbitrary, async (query, style) => {
          const text = printQuery(query, style);
          fc.pre(text.length <= 4096);
          const reply = await search(key, text);
          expect(reply.status, `${text} → ${JSON.stringify(reply.body)}`).toBe(200);
        }),
        { numRuns: 150 },
      );
    },
    HTTP_PROPERTY_TIMEOUT_MS,
  );
});
