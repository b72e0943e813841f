import { describe, expect, it } from "vitest";
import { EXPRESSIONS } from "../../src/limits";
import { dataDatabaseOf } from "../support/context";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createProxy, expectProxyError, invoke } from "../support/proxies";
import { createToken, seedTokenTenant } from "../support/tokens";

/**
 * Rule 3: token expressions and detokenization expressions hold output markup and literal text
 * only, and every evaluation has a budget of filter calls and of output length.
 */

const QUADRATIC = "{% for a in data %}{% for b in data %}{% endfor %}{% endfor %}x";
const deepChain = (depth: number) => `{{ data${" | upcase".repeat(depth)} }}`;

async function refusedCreate(body: Record<string, unknown>, field: string) {
  const { key } = await seedTokenTenant();
  const before = await rowCounts();
  const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token", ...body } }), 400);
  expect(
    Object.keys(problem.errors ?? {}).some((path) => path.startsWith(field)),
    JSON.stringify(problem),
  ).toBe(true);
  expect(await rowCounts()).toEqual(before);
  return problem;
}

describe("rule 3: every expression is bounded", () => {
  it("the issue's quadratic fingerprint expression over a 3,000-element array is a 400 naming the field", async () => {
    const data = Array.from({ length: 3000 }, (_, i) => i);
    const problem = await refusedCreate({ data, fingerprint_expression: QUADRATIC }, "fingerprint_expression");
    expect(problem.errors!.fingerprint_expression![0]).toContain("tag");
  });

  for (const [field, value] of [
    ["mask", "{% assign x = data %}{{ x }}"],
    ["mask", { number: "{% if data %}{{ data }}{% endif %}" }],
    ["search_indexes", ["{% capture c %}{{ data }}{% endcapture %}{{ c }}"]],
    ["fingerprint_expression", "{%- liquid echo data -%}"],
    ["id", "{% for c in (1..3) %}{{ data }}{% endfor %}"],
  ] as const) {
    it(`any Liquid tag in ${field} is a 400 naming ${field}: ${JSON.stringify(value)}`, async () => {
      await refusedCreate({ data: "some value", [field]: value }, field);
    });
  }

  it("a 400 KB string written out many times is refused by the output budget", async () => {
    const data = "x".repeat(400 * 1024);
    const problem = await refusedCreate({ data, fingerprint_expression: "{{ data }}".repeat(50) }, "fingerprint_expression");
    expect(problem.errors!.fingerprint_expression![0]).toContain("output");
  });

  it("an object mask whose leaves each copy the data is refused by the one budget of the mask", async () => {
    const data = "y".repeat(100 * 1024);
    const mask = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, "{{ data | append: 'z' }}"]));
    await refusedCreate({ data, mask }, "mask");
  });

  it(`a filter chain deeper than ${EXPRESSIONS.maxFilterCalls} filters is a 400`, async () => {
    const problem = await refusedCreate({ data: "abc", mask: deepChain(EXPRESSIONS.maxFilterCalls + 1) }, "mask");
    expect(problem.errors!.mask![0]).toContain("filter");
    const { key } = await seedTokenTenant();
    const within = await call("POST", "/tokens", {
      key,
      body: { type: "token", data: "abc", mask: deepChain(EXPRESSIONS.maxFilterCalls) },
    });
    expect(within.status, within.text).toBe(201);
  });

  it("a detokenization expression is held to the same budget", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "abc" });
    const proxy = await createProxy(tenant, { require_auth: true });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      body: { value: `{{ ${token.id}${" | upcase".repeat(EXPRESSIONS.maxFilterCalls + 1)} }}` },
    });
    expect(expectProxyError(reply, 400).detail).toContain("filter");
  });

  it("a stored mask that would exceed the budget yields a redacted value on read, never a 500", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "abc", mask: "{{ data | last4 }}" });
    // A mask stored before the rule: the API no longer accepts it, so it is written in place.
    const database = await dataDatabaseOf(tenant.tenantId);
    const stored = JSON.stringify(QUADRATIC);
    await database.prepare("UPDATE tokens SET mask = ? WHERE tenant_id = ? AND id = ?").bind(stored, tenant.tenantId, token.id).run();
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const read = await call("GET", `/tokens/${token.id}`, { key: reader.key });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toBeUndefined();
  });
});
