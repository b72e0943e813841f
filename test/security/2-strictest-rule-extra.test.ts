import { describe, expect, it } from "vitest";
import { call, createApplication } from "../support/harness";
import { createToken, seedTokenTenant, VISA } from "../support/tokens";

/**
 * Rule 2, further paths. A create answer shows data under the caller's token:create transform,
 * which is sound for data the caller just sent. A deduplicated create answers an existing token
 * instead, whose data the caller did not send: its cvc and expiry, or, for a token whose
 * fingerprint covers one member, everything else it holds.
 */

describe("rule 2 (extra): a deduplicated create shows no more than a read would", () => {
  it("a key that may create cards (reveal) learns a stored card's cvc and expiry from its number alone", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "card", data: { number: VISA, expiration_month: 7, expiration_year: 2031, cvc: "864" } });
    // A checkout server's key: it sees what it sent back, and holds no token:read. (A public key may not deduplicate at all: rule 8.)
    const browser = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:create"] }],
    });
    const guess = { number: VISA, expiration_month: 1, expiration_year: 2030 };
    const reply = await call("POST", "/tokens", { key: browser.key, body: { type: "card", data: guess, deduplicate_token: true } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body._extras.deduplicated).toBe(true);
    // The data only: ids and the fingerprint are random text that may hold "864" by chance.
    expect(JSON.stringify(reply.body.data ?? null)).not.toContain("864");
    expect(reply.body.data?.expiration_month).not.toBe(7);
  });

  it("a token whose fingerprint is one member answers its other members to whoever knows that member", async () => {
    const tenant = await seedTokenTenant();
    const profile = { email: "jane@example.com", ssn: "123-45-6789", diagnosis: "confidential" };
    await createToken(tenant.key, { type: "token", data: profile, fingerprint_expression: "{{ data.email }}" });
    const creator = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "reveal", permissions: ["token:create"] }],
    });
    const reply = await call("POST", "/tokens", {
      key: creator.key,
      body: { type: "token", data: { email: profile.email }, fingerprint_expression: "{{ data.email }}", deduplicate_token: true },
    });
    expect(reply.body._extras.deduplicated).toBe(true);
    expect(reply.text).not.toContain(profile.ssn);
  });
});
