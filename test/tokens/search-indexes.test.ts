import { describe, expect, it } from "vitest";
import { call, expectProblem, rowCounts } from "../support/harness";
import { createToken, expectedBlindIndexes, SSN, seedTokenTenant, storedBlindIndexes, VISA } from "../support/tokens";

describe("search indexes", () => {
  it("a social security number without search_indexes is indexed by its data, its dash-less form and its last four", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    expect(await storedBlindIndexes(token.id)).toEqual(await expectedBlindIndexes(tenant.tenantId, [SSN, "123456789", "6789"]));
  });

  it("an employer id number gets the same default indexes", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "employer_id_number", data: "12-3456789" });
    expect(await storedBlindIndexes(token.id)).toEqual(await expectedBlindIndexes(tenant.tenantId, ["12-3456789", "123456789", "6789"]));
  });

  it("values that evaluate equally are stored once", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: "123456789" });
    expect(await storedBlindIndexes(token.id)).toEqual(await expectedBlindIndexes(tenant.tenantId, ["123456789", "6789"]));
  });

  it("a token of type token has no search indexes by default", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: "secret" });
    expect(await storedBlindIndexes(token.id)).toEqual([]);
  });

  it("given search indexes replace the defaults and are evaluated against the data", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, {
      type: "token",
      data: { email: "Ada@Example.com", phone: "+44 20 7946 0000" },
      search_indexes: ["{{ data.email }}", "{{ data.phone | remove: ' ' }}"],
    });
    expect(token.search_indexes).toEqual(["{{ data.email }}", "{{ data.phone | remove: ' ' }}"]);
    expect(await storedBlindIndexes(token.id)).toEqual(await expectedBlindIndexes(tenant.tenantId, ["ada@example.com", "+442079460000"]));
  });

  it("an empty list gives a social security number no indexes", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "social_security_number", data: SSN, search_indexes: [] });
    expect(await storedBlindIndexes(token.id)).toEqual([]);
  });

  it("values are stored only as keyed HMACs of the lower-cased value", async () => {
    const tenant = await seedTokenTenant();
    const upper = await createToken(tenant.key, { type: "token", data: "MixedCase", search_indexes: ["{{ data }}"] });
    const lower = await createToken(tenant.key, { type: "token", data: "mixedcase", search_indexes: ["{{ data }}"] });
    const [stored] = await storedBlindIndexes(upper.id);
    expect(stored).not.toContain("mixedcase");
    expect(stored).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await storedBlindIndexes(lower.id)).toEqual([stored]);
  });

  it("the same value has different blind indexes in different tenants", async () => {
    const first = await seedTokenTenant();
    const second = await seedTokenTenant();
    const a = await createToken(first.key, { type: "social_security_number", data: SSN });
    const b = await createToken(second.key, { type: "social_security_number", data: SSN });
    const [ofFirst, ofSecond] = [await storedBlindIndexes(a.id), await storedBlindIndexes(b.id)];
    expect(ofFirst).toHaveLength(3);
    expect(ofSecond).toHaveLength(3);
    expect(ofFirst.filter((index) => ofSecond.includes(index))).toEqual([]);
  });

  it("search indexes are refused on types other than social_security_number, employer_id_number, token and card", async () => {
    const { key } = await seedTokenTenant();
    for (const body of [
      { type: "card_number", data: VISA },
      { type: "us_bank_account_number", data: "000123456789" },
      { type: "us_bank_routing_number", data: "011000015" },
    ]) {
      const problem = expectProblem(await call("POST", "/tokens", { key, body: { ...body, search_indexes: ["{{ data }}"] } }), 400);
      expect(problem.errors?.search_indexes?.[0]).toBe("are only allowed on types token, social_security_number, employer_id_number, card");
    }
  });

  it("an expression that evaluates to an empty value fails the create with a 400 naming it, and stores nothing", async () => {
    const { key } = await seedTokenTenant();
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/tokens", {
        key,
        body: { type: "token", data: { a: "x" }, search_indexes: ["{{ data.a }}", "{{ data.missing }}"] },
      }),
      400,
    );
    expect(problem.errors?.["search_indexes[1]"]?.[0]).toContain("neither null nor empty: {{ data.missing }}");
    expect(problem.errors?.["search_indexes[0]"]).toBeUndefined();
    expect(await rowCounts()).toEqual(before);
  });

  it("an expression that evaluates to null fails the create with a 400", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(
      await call("POST", "/tokens", { key, body: { type: "token", data: { a: null }, search_indexes: ["{{ data | json: '$.a' }}"] } }),
      400,
    );
    expect(problem.errors?.["search_indexes[0]"]?.[0]).toContain("neither null nor empty");
  });

  it("a blank value counts as empty", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: "x", search_indexes: ["  "] } }), 400);
    expect(problem.errors?.["search_indexes[0]"]?.[0]).toContain("neither null nor empty");
  });

  it("at most 20 search indexes are accepted", async () => {
    const { key } = await seedTokenTenant();
    const search_indexes = Array.from({ length: 21 }, (_, i) => `{{ data }}${i}`);
    const problem = expectProblem(await call("POST", "/tokens", { key, body: { type: "token", data: "x", search_indexes } }), 400);
    expect(problem.errors?.search_indexes?.[0]).toContain("at most 20");
  });
});
