import { describe, expect, it } from "vitest";
import { detokenizedContext } from "../../src/idempotency/service";
import { callConfigured } from "../support/configured";
import { dataDatabaseOf, keysOfTenant } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication, expectProblem, type Reply, rowCounts } from "../support/harness";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/**
 * Rules 2 and 6 through `{P}-IDEMPOTENCY-KEY`: a replay answers the first response, stored for 24
 * hours, without asking whether the caller may still see what it holds. For POST /tokens the
 * replayer sends the data again, but a react answer holds data the request only named by token id,
 * and a card's cvc outlives CARD_CVC_RETENTION_S in the stored response.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099, cvc: "987" };
/** CARD_CVC_RETENTION_S as the suite runs it (wrangler.toml's default). */
const CVC_RETENTION_MS = 3_600_000;

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
    expect(replay.text).not.toContain(JSON.stringify(CARD.cvc)); // quoted: "987" alone may turn up inside an id
  });
});

/** A reactor that returns its detokenized args and tokenizes a charge id on every run, as a payment reactor would. */
async function chargingReactor() {
  const { tenant, caller, card } = await echoReactor();
  const formula = await createFormula(tenant, {
    code: 'module.exports = async (req) => ({ raw: req.args, tokenize: { charge: "ch_1" } });',
  });
  const reactor = await createReactor(tenant, formula.id, { applicationId: tenant.applicationId });
  return { tenant, reactor, caller, card };
}

function expectNotReplayed(reply: Reply, reason: RegExp) {
  const problem = expectProblem(reply, 409);
  expect(problem.detail).toMatch(
    /^The request with this idempotency key was processed \(it answered 200\), but its answer is not replayed: /,
  );
  expect(problem.detail).toMatch(reason);
  expect(reply.headers.get("SVC-Idempotent-Replayed")).toBeNull();
}

async function storedRecord(tenant: TokenTenant) {
  return (await dataDatabaseOf(tenant.tenantId))
    .prepare("SELECT response, detokenized, cvc_expires_at AS cvcExpiresAt FROM idempotency_records WHERE tenant_id = ?")
    .bind(tenant.tenantId)
    .first<{ response: string | null; detokenized: string | null; cvcExpiresAt: number | null }>();
}

describe("rule 2 (extra): a replay shows only what a fresh call would, and never runs the request again", () => {
  it("while the caller may still use the token, a replay is the first answer and runs nothing", async () => {
    const { reactor, caller, card } = await chargingReactor();
    const first = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expect(first.status, first.text).toBe(200);
    const before = await rowCounts();

    const replay = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expect(replay.status, replay.text).toBe(200);
    expect(replay.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    expect(await rowCounts()).toEqual(before);
  });

  it("after the token was deleted, the replay is a 409 saying the request was processed, and runs nothing", async () => {
    const { tenant, reactor, caller, card } = await chargingReactor();
    expect((await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT)).status).toBe(200);
    expect((await call("DELETE", `/tokens/${card.id}`, { key: tenant.key })).status).toBe(204);
    const before = await rowCounts();

    const replay = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expectNotReplayed(replay, /does not exist or has expired/);
    expect(replay.text).not.toContain(VISA);
    expect(await rowCounts()).toEqual(before);
  });

  it("after the caller's rule went from reveal to mask, the replay is a 409: a fresh call would show the card masked", async () => {
    const { tenant, reactor, caller, card } = await echoReactor();
    const rules = (transform: string) => ({
      name: "reacting backend",
      permissions: [],
      rules: [{ priority: 1, container: "/", transform, permissions: ["token:use"] }],
    });
    expect((await call("PUT", `/applications/${caller.id}`, { key: tenant.managementKey, body: rules("reveal") })).status).toBe(200);
    expect((await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT)).text).toContain(VISA);

    expect((await call("PUT", `/applications/${caller.id}`, { key: tenant.managementKey, body: rules("mask") })).status).toBe(200);
    const fresh = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` });
    expect(fresh.status, fresh.text).toBe(200);
    expect(fresh.text).not.toContain(VISA);
    const replay = await react(caller.key, reactor.id, { card: `{{ ${card.id} }}` }, IDEMPOTENT);
    expectNotReplayed(replay, /now masks its data/);
    expect(replay.text).not.toContain(VISA);
  });

  it("the tokens a stored answer detokenized are kept sealed: an alias id made from the data is not stored in the clear", async () => {
    const { tenant, reactor, caller } = await echoReactor();
    const alias = await createToken(tenant.key, { id: "{{ data | alias_preserve_format: 0, 4 }}", type: "token", data: "111-22-3333" });
    expect((await react(caller.key, reactor.id, { ssn: `{{ ${alias.id} }}` }, IDEMPOTENT)).status).toBe(200);

    const record = await storedRecord(tenant);
    expect(record?.detokenized).toMatch(/^v\d+\./);
    expect(record?.detokenized).not.toContain(alias.id);
    const keys = await keysOfTenant(tenant.tenantId);
    expect(JSON.parse(await keys.decrypt(record!.detokenized!, detokenizedContext("replay-me")))).toEqual({
      tokens: { [alias.id]: "reveal" },
      cvc: false,
    });
  });

  it("past a detokenized cvc's deadline the cron withdraws the stored answer, and the replay is a 409", async () => {
    const { tenant, reactor, caller } = await echoReactor();
    const card = await createToken(tenant.key, { type: "card", data: CARD });
    const args = { card: `{{ ${card.id} }}` };
    const first = await react(caller.key, reactor.id, args, IDEMPOTENT);
    expect(first.text).toContain(CARD.cvc);
    // Within the window, the replay is the first answer, cvc included.
    expect((await react(caller.key, reactor.id, args, IDEMPOTENT)).body).toEqual(first.body);

    await runCron(Date.now() + CVC_RETENTION_MS + 1000);
    const record = await storedRecord(tenant);
    expect(record).toMatchObject({ response: null, cvcExpiresAt: null });
    const keys = await keysOfTenant(tenant.tenantId);
    // The record names the token and whether a cvc was detokenized; it holds no value.
    expect(JSON.parse(await keys.decrypt(record!.detokenized!, detokenizedContext("replay-me")))).toEqual({
      tokens: { [card.id]: "reveal" },
      cvc: true,
    });
    expectNotReplayed(await react(caller.key, reactor.id, args, IDEMPOTENT), /a card's cvc, whose retention period has passed/);
  });
});
