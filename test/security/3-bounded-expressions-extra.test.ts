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
    it(`a public key's fingerprint expression {{ data | ${filter}: "a", "data contains 'x'" }} over 3,000 elements is a quick 400`, async () => {
      const tenant = await seedTokenTenant();
      const browser = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
      const data = Array.from({ length: 3000 }, () => 0);
      // A predicate that reads the whole array and is never true, so has_exp and find_exp never stop early.
      const predicate = "data contains 'x'";
      const started = Date.now();
      const reply = await call("POST", "/tokens", {
        key: browser.key,
        body: { type: "token", data, fingerprint_expression: `{{ data | ${filter}: "a", "${predicate}" }}` },
      });
      const elapsed = Date.now() - started;
      expect(Object.keys(expectProblem(reply, 400).errors ?? {})).toContain("fingerprint_expression");
      expect(elapsed, `${elapsed} ms`).toBeLessThan(500);
    });
  }
});
