import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { call, createApplication } from "../support/harness";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, seedTokenTenant, VISA } from "../support/tokens";

/**
 * Rules 2 and 6 through `{P}-IDEMPOTENCY-KEY`: a replay answers the first response, stored for 24
 * hours, without asking whether the caller may still see what it holds. For POST /tokens the
 * replayer sends the data again, but a react answer holds data the request only named by token id,
 * and a card's cvc outlives CARD_CVC_RETENTION_S in the stored response.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099, cvc: "987" };

/** A reactor that returns its detokenized args, and a caller that may use every token. */
async function echoReactor() {
  const tenant = await seedTokenTenant();
  const formula = await createFormula(tenant, { code: "module.exports = async (req) => ({ raw: req.args });" });
  const reactor = await createReactor(tenant, formula.id);
  const caller = await createApplication(tenant, { type: "private", name: "reacting backend", permissions: ["token:use"] });
  const card = await createToken(tenant.key, { type: "card_number", data: VISA });
  return { tenant, reactor, caller, card };
}

const IDEMPOTENT = { "SVC-IDEMPOTENCY-KEY": "replay-me" };

describe("rule 2 (extra): an idempotent replay is a presentation too", () => {
  it("a react replayed after the token was deleted still answers its plaintext", async () => {
    const { tenant, reactor, caller, card } = await echoReactor();
    const first = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expect(first.status, first.text).toBe(200);
    expect(first.text).toContain(VISA);

    expect((await call("DELETE", `/tokens/${card.id}`, { key: tenant.key })).status).toBe(204);
    const replay = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expect(replay.text).not.toContain(VISA);
  });

  it("a react replayed after the caller's token:use was taken away still answers the plaintext", async () => {
    const { tenant, reactor, caller, card } = await echoReactor();
    expect((await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT)).text).toContain(VISA);

    const downgraded = await call("PUT", `/applications/${caller.id}`, {
      key: tenant.managementKey,
      body: {
        name: "reacting backend",
        permissions: [],
        rules: [{ priority: 1, container: "/", transform: "redact", permissions: ["token:use"] }],
      },
    });
    expect(downgraded.status, downgraded.text).toBe(200);
    const fresh = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` });
    expect(fresh.status, fresh.text).toBe(403);
    const replay = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expect(replay.text).not.toContain(VISA);
  });

  it("a card's cvc is not answered, nor kept, past CARD_CVC_RETENTION_S by a replayed react", async () => {
    const { tenant, reactor, caller } = await echoReactor();
    const card = await createToken(tenant.key, { type: "card", data: CARD });
    const args = { card: `{{ ${card.id} }}` };
    const first = await react(caller.key, reactor.id, args, IDEMPOTENT);
    expect(first.text).toContain(CARD.cvc);

    // The window has passed: a fresh read of the card has no cvc, a replay must not have one either.
    const headers = { "SVC-API-KEY": caller.key, ...IDEMPOTENT };
    const later = { CARD_CVC_RETENTION_S: "0" };
    const fresh = await callConfigured(later, "POST", `/reactors/${reactor.id}/react`, {
      headers: { "SVC-API-KEY": caller.key },
      body: { args },
    });
    expect(fresh.status).toBe(200);
    const replay = await callConfigured(later, "POST", `/reactors/${reactor.id}/react`, { headers, body: { args } });
    expect(replay.text).not.toContain(CARD.cvc);
  });
});
