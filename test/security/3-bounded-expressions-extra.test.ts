import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { seedTokenTenant } from "../support/tokens";

/**
 * Rule 3, further attacks: Liquid's `*_exp` filters evaluate an expression once per element, and
 * that expression sees the whole scope, so `data contains 'x'` inside one of them compares the whole
 * array once per element: quadratic work from a single filter call.
 */

const QUADRATIC_FILTERS = ["where_exp", "reject_exp", "group_by_exp", "has_exp", "find_exp", "find_index_exp"];

describe("rule 3 (extra): no filter evaluates an expression per element", () => {
  for (const filter of QUADRATIC_FILTERS) {
    it(`a public key's fingerprint expression {{ data | ${filter}: "a", "data contains 'x'" }} over 5,000 elements is a 400`, async () => {
      const tenant = await seedTokenTenant();
      const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
      const data = Array.from({ length: 5000 }, () => 0);
      // A predicate that reads the whole array and is never true, so has_exp and find_exp never stop early.
      const predicate = "data contains 'x'";
      const reply = await call("POST", "/tokens", {
        key: browser.key,
        body: { type: "token", data, fingerprint_expression: `{{ data | ${filter}: "a", "${predicate}" }}` },
      });
      expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toContain("fingerprint_expression");
    });
  }
});

/**
 * Filter calls are counted, but not what each call reads: a filter that does not charge its input
 * to the render's memory limit (slugify runs a Unicode regex over it, json parses it, url_encode
 * escapes it) reads the whole data again on each of the 32 calls an evaluation may make, and a
 * stored mask does so on every read of the token.
 */
describe("rule 3 (extra): each evaluation bounds what its filters read, not only how many run", () => {
  const jsonText = JSON.stringify(Array.from({ length: 450_000 }, () => 0));

  for (const [name, expression] of [
    ["31 slugify calls", `{{ data${" | slugify".repeat(31)} | size }}`],
    ["32 json parses", "{{ data | json: '$[0]' }}".repeat(32)],
    ["31 url_encode calls", `{{ data${" | url_encode".repeat(31)} | size }}`],
  ] as const) {
    it(`a public key's fingerprint expression of ${name} over a 900 KB string is a 400 naming the field`, async () => {
      const tenant = await seedTokenTenant();
      const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
      const reply = await call("POST", "/tokens", {
        key: browser.key,
        body: { type: "token", data: jsonText, fingerprint_expression: expression },
      });
      expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toContain("fingerprint_expression");
    });
  }

  it("a chain of url_encode, which triples every %, cannot grow a 300 KB string to 73 MB inside one evaluation", async () => {
    const tenant = await seedTokenTenant();
    const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const reply = await call("POST", "/tokens", {
      key: browser.key,
      body: { type: "token", data: "%".repeat(300_000), fingerprint_expression: `{{ data${" | url_encode".repeat(5)} | size }}` },
    });
    expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toContain("fingerprint_expression");
  });
});

/**
 * A token has up to 23 evaluations (fingerprint, mask, 20 search indexes, alias id): they share one
 * budget of what their filters read and write, in proportion to the data, or a token would be as
 * costly as 23 full budgets over the same data.
 */
describe("rule 3 (extra): a token's expressions share one bound", () => {
  it("twenty search indexes that each slugify a 900 KB string are a 400 naming the first index past the budget", async () => {
    const tenant = await seedTokenTenant();
    const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const data = JSON.stringify(Array.from({ length: 450_000 }, () => 0));
    const reply = await call("POST", "/tokens", {
      key: browser.key,
      body: {
        type: "token",
        data,
        fingerprint_expression: "{{ data | slugify | size }}",
        search_indexes: Array.from({ length: 20 }, (_, i) => `{{ data | slugify | size }}${i}`),
      },
    });
    const fields = Object.keys(expectProblem(reply, 400).errors ?? {});
    expect(
      fields.some((field) => field.startsWith("search_indexes")),
      fields.join(", "),
    ).toBe(true);
  });
});
