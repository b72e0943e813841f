import { describe, expect, it } from "vitest";
import { sealingContext } from "../../src/idempotency/service";
import { callConfigured } from "../support/configured";
import { dataDatabaseOf, keysOfTenant } from "../support/context";
import { runCron } from "../support/cron";
import { createApplication, rowCounts, seedTenant } from "../support/harness";
import { reactorRunning } from "../support/reactors";
import { REVEAL_EVERYTHING, seedTokenTenant, seedTokenTenantIn, type TokenTenant } from "../support/tokens";

/**
 * Rule 7, the cvc purge: a card's cvc is gone CARD_CVC_RETENTION_S after it was written, from the
 * replies kept for idempotent replays too (they hold what the first request answered).
 */

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };
const OTHER_CARD = { number: "5555555555554444", expiration_month: 1, expiration_year: 2031, cvc: "9876" };
const withoutCvc = ({ cvc: _cvc, ...card }: typeof CARD) => card;
const RETENTION_MS = 3_600_000;

/** A creating request with an idempotency key; `retentionS` "0" means every cvc's window has passed by the next request. */
async function sendWithKey(tenant: TokenTenant, path: string, body: unknown, idempotencyKey: string, retentionS = "3600") {
  const reply = await callConfigured({ CARD_CVC_RETENTION_S: retentionS }, "POST", path, {
    headers: { "SVC-API-KEY": tenant.key, "SVC-IDEMPOTENCY-KEY": idempotencyKey },
    body,
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply;
}

interface StoredReply {
  key: string;
  response: string;
}

async function storedReplies(tenant: TokenTenant): Promise<StoredReply[]> {
  const { results } = await (await dataDatabaseOf(tenant.tenantId))
    .prepare("SELECT key, response FROM idempotency_records WHERE tenant_id = ? ORDER BY key")
    .bind(tenant.tenantId)
    .all<StoredReply>();
  return results;
}

/**
 * Everything the tenant keeps sealed that can hold token data (token ciphertexts and stored
 * replies), decrypted with its keys as an attacker holding them would read it.
 */
async function everythingSealed(tenant: TokenTenant): Promise<string[]> {
  const keys = await keysOfTenant(tenant.tenantId);
  const { results: tokens } = await (await dataDatabaseOf(tenant.tenantId))
    .prepare("SELECT id, ciphertext FROM tokens WHERE tenant_id = ?")
    .bind(tenant.tenantId)
    .all<{ id: string; ciphertext: string }>();
  return Promise.all([
    ...tokens.map((token) => keys.decrypt(token.ciphertext, token.id)),
    ...(await storedReplies(tenant)).map((reply) => keys.decrypt(reply.response, sealingContext(reply.key))),
  ]);
}

describe("rule 7: an idempotent replay shows no cvc past its window", () => {
  it("POST /tokens replayed past the window answers the same token without its cvc, creating nothing", async () => {
    const tenant = await seedTokenTenant();
    const body = { type: "card", data: CARD };
    const first = await sendWithKey(tenant, "/tokens", body, "card-1", "0");
    expect(first.body.data).toEqual(CARD);
    const before = await rowCounts();

    const replay = await sendWithKey(tenant, "/tokens", body, "card-1", "0");
    expect(replay.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(replay.body).toEqual({ ...first.body, data: withoutCvc(CARD) });
    expect(await rowCounts()).toEqual(before);
  });

  it("a replay within the window is the first answer, cvc included", async () => {
    const tenant = await seedTokenTenant();
    const body = { type: "card", data: CARD };
    const first = await sendWithKey(tenant, "/tokens", body, "card-2");
    const replay = await sendWithKey(tenant, "/tokens", body, "card-2");
    expect(replay.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    expect(replay.body.data).toEqual(CARD);
  });

  it("POST /tokenize replayed past the window leaves out the cvc of every card, wherever it is in the answer", async () => {
    const tenant = await seedTokenTenant();
    const body = { checkout: { card: { type: "card", data: CARD } }, wallet: [{ type: "card", data: OTHER_CARD }], name: "Ada" };
    const first = await sendWithKey(tenant, "/tokenize", body, "wallet-1", "0");
    expect([first.body.checkout.card.data, first.body.wallet[0].data]).toEqual([CARD, OTHER_CARD]);

    const replay = await sendWithKey(tenant, "/tokenize", body, "wallet-1", "0");
    expect(replay.body).toEqual({
      checkout: { card: { ...first.body.checkout.card, data: withoutCvc(CARD) } },
      wallet: [{ ...first.body.wallet[0], data: withoutCvc(OTHER_CARD) }],
      name: first.body.name,
    });
  });
});

describe("rule 7: a replayed react shows no cvc past its window", () => {
  const CARD_CODE =
    'module.exports = async (req) => ({ tokenize: { card: { type: "card", data: req.args } }, raw: { card: { type: "card", data: req.args } } });';

  it("neither on the cards it tokenized nor on card objects in its raw result", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, REVEAL_EVERYTHING);
    const { caller, reactor } = await reactorRunning(CARD_CODE, { tenant, applicationId: application.id });
    const react = () =>
      callConfigured({ CARD_CVC_RETENTION_S: "0" }, "POST", `/reactors/${reactor.id}/react`, {
        headers: { "SVC-API-KEY": caller.key, "SVC-IDEMPOTENCY-KEY": "react-1" },
        body: { args: CARD },
      });
    const first = await react();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect([first.body.tokens.card.data, first.body.raw.card.data]).toEqual([CARD, CARD]);

    const replay = await react();
    expect(replay.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(replay.body).toEqual({
      tokens: { card: { ...first.body.tokens.card, data: withoutCvc(CARD) } },
      raw: { card: { type: "card", data: withoutCvc(CARD) } },
    });
  });
});

describe("rule 7: the cron drops cvcs from stored replies once their window has passed", () => {
  it("after the cron, nothing a tenant keeps sealed holds a cvc, in every data database, and replays show none", async () => {
    const one = await seedTokenTenantIn("DB_1");
    const two = await seedTokenTenantIn("DB_2");
    const created = await sendWithKey(one, "/tokens", { type: "card", data: CARD }, "card-3");
    const tokenizeBody = {
      cards: [
        { type: "card", data: CARD },
        { type: "card", data: OTHER_CARD },
      ],
    };
    const tokenized = await sendWithKey(two, "/tokenize", tokenizeBody, "cards-3");
    for (const tenant of [one, two]) {
      expect((await everythingSealed(tenant)).join()).toContain('"cvc"');
    }

    await runCron(Date.now() + RETENTION_MS + 1000);
    for (const tenant of [one, two]) {
      // The member's name as a JSON key: three letters alone could be part of a random fingerprint.
      for (const sealed of await everythingSealed(tenant)) expect(sealed).not.toContain('"cvc"');
    }
    // Replayed within the requests' own window: the stored reply itself has lost the cvcs.
    expect((await sendWithKey(one, "/tokens", { type: "card", data: CARD }, "card-3")).body).toEqual({
      ...created.body,
      data: withoutCvc(CARD),
    });
    expect((await sendWithKey(two, "/tokenize", tokenizeBody, "cards-3")).body).toEqual({
      cards: [
        { ...tokenized.body.cards[0], data: withoutCvc(CARD) },
        { ...tokenized.body.cards[1], data: withoutCvc(OTHER_CARD) },
      ],
    });
  });

  it("a stored reply's cvc deadline is its card's, and a reply without a card has none", async () => {
    const tenant = await seedTokenTenant();
    const card = await sendWithKey(tenant, "/tokens", { type: "card", data: CARD }, "card-5");
    await sendWithKey(tenant, "/tokens", { type: "token", data: { cvc: "123" } }, "not-a-card-5");
    const db = await dataDatabaseOf(tenant.tenantId);
    const deadlines = await db
      .prepare("SELECT key, cvc_expires_at AS deadline FROM idempotency_records WHERE tenant_id = ? ORDER BY key")
      .bind(tenant.tenantId)
      .all<{ key: string; deadline: number | null }>();
    const token = await db
      .prepare("SELECT cvc_expires_at AS deadline FROM tokens WHERE id = ?")
      .bind(card.body.id)
      .first<{ deadline: number }>();
    expect(deadlines.results).toEqual([
      { key: "card-5", deadline: token!.deadline },
      { key: "not-a-card-5", deadline: null },
    ]);
  });

  it("the cron leaves the cvc of a reply within its window, and replies that hold no card, as they are", async () => {
    const tenant = await seedTokenTenant();
    await sendWithKey(tenant, "/tokens", { type: "card", data: CARD }, "card-4");
    await sendWithKey(tenant, "/tokens", { type: "token", data: { cvc: "123" } }, "not-a-card");
    const before = await storedReplies(tenant);

    await runCron(Date.now());
    expect(await storedReplies(tenant)).toEqual(before);
    await runCron(Date.now() + RETENTION_MS + 1000);
    const after = await storedReplies(tenant);
    expect(after.find((reply) => reply.key === "not-a-card")).toEqual(before.find((reply) => reply.key === "not-a-card"));
    expect(after.find((reply) => reply.key === "card-4")).not.toEqual(before.find((reply) => reply.key === "card-4"));
  });
});
