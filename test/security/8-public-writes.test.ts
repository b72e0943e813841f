import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant } from "../support/tokens";

/*
 * Rule 8 (issue 34): public keys write only what they made. Anyone can read a public key from the
 * page; with token:update it overwrote any token whose id it learned, such as the bank account a
 * merchant sends payouts to.
 */

const BANK = { routing_number: "110000000", account_number: "000123456789" };
const ATTACKER_BANK = { routing_number: "110000000", account_number: "000999999999" };

function patch(key: string, id: string, body: unknown) {
  return call("PATCH", `/tokens/${id}`, { key, body, contentType: "application/merge-patch+json" });
}

async function seedPayouts() {
  const tenant = await seedTokenTenant();
  const browser = await createApplication(tenant, { type: "public", permissions: ["token:create", "token:update"] });
  const payoutAccount = await createToken(tenant.key, { type: "bank", data: BANK });
  return { tenant, browser, payoutAccount };
}

describe("rule 8: a public key updates only the tokens its own application created", () => {
  it("another application's token is a 403 that says nothing about it, and is left as it was", async () => {
    const { tenant, browser, payoutAccount } = await seedPayouts();
    const refused = expectProblem(await patch(browser.key, payoutAccount.id, { data: ATTACKER_BANK }), 403);
    expect(refused.detail).not.toContain(payoutAccount.id);
    const stored = await call("GET", `/tokens/${payoutAccount.id}`, { key: tenant.key });
    expect(stored.body.data).toEqual(BANK);
    expect(stored.body.modified_at).toBe(payoutAccount.modified_at);
  });

  it("an unknown id is the same 403 as another application's token: the key cannot tell which ids exist", async () => {
    const { browser, payoutAccount } = await seedPayouts();
    const known = expectProblem(await patch(browser.key, payoutAccount.id, { metadata: { a: "b" } }), 403);
    const unknown = expectProblem(await patch(browser.key, crypto.randomUUID(), { metadata: { a: "b" } }), 403);
    expect(unknown.detail).toBe(known.detail);
  });

  it("another public application of the tenant cannot update the first one's tokens", async () => {
    const { tenant, browser } = await seedPayouts();
    const own = await call("POST", "/tokens", { key: browser.key, body: { type: "bank", data: BANK } });
    expect(own.status, own.text).toBe(201);
    const other = await createApplication(tenant, { type: "public", permissions: ["token:create", "token:update"] });
    expectProblem(await patch(other.key, own.body.id, { data: ATTACKER_BANK }), 403);
  });

  it("its own token it updates, and the answer is under redact: id, type, metadata and times", async () => {
    const { browser } = await seedPayouts();
    const own = await call("POST", "/tokens", { key: browser.key, body: { type: "bank", data: BANK } });
    const updated = await patch(browser.key, own.body.id, { data: ATTACKER_BANK, metadata: { step: "2" } });
    expect(updated.status, updated.text).toBe(200);
    expect(Object.keys(updated.body).sort()).toEqual(
      ["_extras", "created_at", "created_by", "expires_at", "id", "metadata", "modified_at", "modified_by", "tenant_id", "type"].sort(),
    );
    expect(updated.body.metadata).toEqual({ step: "2" });
  });
});
