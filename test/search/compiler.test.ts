import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { termsOf } from "../../src/search/ast";
import { compileSearch } from "../../src/search/compile";
import { parseQuery } from "../../src/search/parse";
import { queryArbitrary } from "../support/query-text";
import { searchIds } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** The compiler: query values travel as one bound parameter, never as SQL text. */

const SCOPE = { tenantId: "tenant", now: 0, containers: ["/pii/"], blindIndexes: new Map<string, string>() };
const WINDOW = { limit: 20, offset: 0, countLimit: 100 };
const HOSTILE = `x'); DELETE FROM tokens; --`;
const DATA_TYPES = /t\.type IN \('token', 'social_security_number', 'employer_id_number', 'card'\)/g;

describe("the compiler", () => {
  it("no value of the query is ever part of the SQL text", () => {
    const compiled = compileSearch(parseQuery(`metadata.note:"${HOSTILE}" OR type:token`), SCOPE, WINDOW);
    for (const statement of [compiled.page, compiled.count]) {
      expect(statement.sql).not.toContain("DELETE");
      expect(statement.sql).not.toContain("note");
      expect(statement.params[2]).toBe(JSON.stringify(["/pii/", "/pii0", "note", HOSTILE.toLowerCase(), "token"]));
    }
  });

  it("the SQL of any query is made only of the compiler's own text", () => {
    fc.assert(
      fc.property(queryArbitrary, (query) => {
        // Any blind index will do: the compiler only binds it.
        const blindIndexes = new Map(termsOf(query).flatMap((term) => (term.field === "data" ? [[term.value, "blind"] as const] : [])));
        const compiled = compileSearch(query, { ...SCOPE, blindIndexes }, WINDOW);
        // The one quoted text is the list of token types data: may match, constants of the code.
        const withoutTypes = compiled.page.sql.replace(DATA_TYPES, "");
        expect(withoutTypes).toMatch(/^[A-Za-z0-9_ .,*()=<>+?"-]+$/);
      }),
      { numRuns: 300 },
    );
  });

  it("a value that looks like SQL is matched literally", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "x", metadata: { note: HOSTILE } });
    expect(await searchIds(key, `metadata.note:"${HOSTILE}"`)).toEqual([token.id]);
    expect(await searchIds(key, null)).toEqual([token.id]);
  });
});
