import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Evaluates an expression as a token's mask, read back by an application whose transform is mask. */
async function masked(data: unknown, mask: string): Promise<unknown> {
  const tenant = await seedTokenTenant();
  const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
  const token = await createToken(tenant.key, { type: "token", data, mask });
  const read = await call("GET", `/tokens/${token.id}`, { key: reader.key });
  expect(read.status, JSON.stringify(read.body)).toBe(200);
  return read.body.data;
}

async function refused(body: Record<string, unknown>) {
  const { key } = await seedTokenTenant();
  return expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: "x", ...body } }), 400);
}

describe("Liquid expressions", () => {
  it("an object or array output renders as JSON", async () => {
    expect(await masked({ b: { c: 1 }, a: [1, 2] }, "{{ data.b }}|{{ data.a }}")).toBe('{"c":1}|[1,2]');
  });

  it("pad_left and pad_right pad to a length", async () => {
    expect(await masked("42", "{{ data | pad_left: 5, '0' }}")).toBe("00042");
    expect(await masked("42", "{{ data | pad_right: 4 }}|")).toBe("42  |");
  });

  it("the standard filters are available", async () => {
    expect(await masked("abc def", "{{ data | upcase | split: ' ' | first }}")).toBe("ABC");
  });

  it("the fingerprint expression sees metadata as well as data", async () => {
    const { key } = await seedTokenTenant();
    const expression = "{{ data }}/{{ metadata.region }}";
    const eu = await createToken(key, { type: "token", data: "x", metadata: { region: "eu" }, fingerprint_expression: expression });
    const us = await createToken(key, { type: "token", data: "x", metadata: { region: "us" }, fingerprint_expression: expression });
    const eu2 = await createToken(key, { type: "token", data: "x", metadata: { region: "eu" }, fingerprint_expression: expression });
    expect(eu.fingerprint).not.toBe(us.fingerprint);
    expect(eu.fingerprint).toBe(eu2.fingerprint);
  });

  it("an unknown filter is a 400 naming the member that holds it", async () => {
    expect((await refused({ mask: "{{ data | shout }}" })).errors?.mask?.[0]).toContain("undefined filter: shout");
    expect((await refused({ fingerprint_expression: "{{ data | shout }}" })).errors?.fingerprint_expression).toBeDefined();
    expect((await refused({ search_indexes: ["{{ data }}", "{{ data | shout }}"] })).errors?.["search_indexes[1]"]).toBeDefined();
  });

  it("a malformed expression is a 400", async () => {
    const problem = await refused({ mask: "{{ data" });
    expect(problem.errors?.mask?.[0]).toContain("is not a valid expression");
  });

  it("an expression cannot read files with include, render or layout", async () => {
    for (const mask of ["{% include 'secrets' %}", "{% render 'secrets' %}", "{% layout 'secrets' %}"]) {
      expect((await refused({ mask })).errors?.mask?.[0]).toContain("is not a valid expression");
    }
  });

  it("an expression with a loop is a 400 before it runs: expressions hold no tags", async () => {
    const problem = await refused({ mask: "{% for i in (1..100000000) %}{{ i }}{% endfor %}" });
    expect(problem.errors?.mask?.[0]).toContain("{% for %} are not allowed");
  });

  it("an expression whose output grows geometrically is stopped with a 400", async () => {
    const widen = ` | replace: 'x', '${"x".repeat(40)}'`;
    const problem = await refused({ mask: `{{ data${widen.repeat(8)} }}` });
    expect(problem.errors?.mask?.[0]).toContain("more than its budget");
  });

  it("an expression longer than 1000 characters is refused", async () => {
    const problem = await refused({ mask: `{{ data }}${"x".repeat(1000)}` });
    expect(problem.errors?.mask?.[0]).toContain("at most 1000 characters");
  });

  it("a filter argument out of range is a 400", async () => {
    expect((await refused({ mask: "{{ data | reveal_last: -1 }}" })).errors?.mask?.[0]).toContain("reveal_last needs a count");
    expect((await refused({ mask: "{{ data | reveal_last: 2, '**' }}" })).errors?.mask?.[0]).toContain("exactly one character");
    expect((await refused({ mask: "{{ data | pad_left: 100000 }}" })).errors?.mask?.[0]).toContain("pad_left needs a length");
  });
});
