import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { createApplication } from "../support/harness";
import { createToken, seedTokenTenant } from "../support/tokens";

/**
 * Rule 4, further attacks. A deduplicating create confirms one guess, so a tokenize counts each of
 * them. A search confirms as many guesses as it has `data:` terms: one query of 100 of them tests
 * 100 candidate values against every token in reach, and counts as one request.
 */

const LOW_KEY_LIMIT = { KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT };

function searchAs(key: string, query: string) {
  return callConfigured(LOW_KEY_LIMIT, "POST", "/tokens/search", { headers: { "SVC-API-KEY": key }, body: { query } });
}

describe("rule 4 (extra): each guess a request confirms is counted", () => {
  it("a masked search key cannot test 100 SSNs in one request: a query of 100 data: terms counts as 100", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "social_security_number", data: "123-45-6789" });
    // The mask shows XXX-XX-6789; the area number is guessable: 100 candidates remain.
    const searcher = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const candidates = Array.from({ length: 100 }, (_, group) => `123-${String(group).padStart(2, "0")}-6789`);
    const query = candidates.map((candidate) => `data:${candidate}`).join(" OR ");
    const reply = await callConfigured(LOW_KEY_LIMIT, "POST", "/tokens/search", {
      headers: { "SVC-API-KEY": searcher.key },
      body: { query },
    });
    // With the key limit at 5 a window, one such query confirms 20 times more guesses than allowed.
    expect(reply.status, JSON.stringify(reply.body)).toBe(429);
  });

  it("a search counts each distinct data: value: five fit the limit of 5, and a value repeated counts once", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "social_security_number", data: "123-45-6789" });
    const repeating = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const repeated = await searchAs(repeating.key, Array.from({ length: 100 }, () => "data:123-45-6789").join(" OR "));
    expect(repeated.status, JSON.stringify(repeated.body)).toBe(200);
    const guessing = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const five = ["123-45-6789", "123-45-6780", "123-45-6781", "123-45-6782", "123-45-6783"];
    const guessed = await searchAs(guessing.key, five.map((value) => `data:${value}`).join(" OR "));
    expect(guessed.status, JSON.stringify(guessed.body)).toBe(200);
    expect((guessed.body as { data: unknown[] }).data).toHaveLength(1);
  });

  it("a malformed query of many data: terms is still a 400 naming the query", async () => {
    const tenant = await seedTokenTenant();
    const searcher = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const query = `${Array.from({ length: 100 }, (_, index) => `data:${index}-guess`).join(" OR ")} AND (`;
    const reply = await searchAs(searcher.key, query);
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect((reply.body as { errors: Record<string, string[]> }).errors).toHaveProperty("query");
  });
});
