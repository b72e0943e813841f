import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { dataDatabaseOf } from "../support/context";
import { call, callRoute, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createFormula, createReactor, react } from "../support/reactors";
import { createSession } from "../support/sessions";
import { CARD, convertIntent, createIntent, INTENT_PERMISSIONS, seedIntentTenant, storedIntents } from "../support/token-intents";

/*
 * Rule 8 for token intents: a public key creates them from every shopper's browser, so it must learn
 * nothing through them that it could not learn before: no fingerprint or card fact to compare
 * guesses with, no intent it did not just create, no way to turn one into a token, and no more
 * writes than its limits allow. And a private key converts an intent once.
 */

async function tokenCount(tenantId: string): Promise<number> {
  const row = await (await dataDatabaseOf(tenantId))
    .prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ n: number }>();
  return row!.n;
}

/** A session key its merchant authorized to use and read every token, revealed: what a reveal page at its most powerful holds. */
async function revealingSessionKey(browserKey: string, serverKey: string): Promise<string> {
  const session = await createSession(browserKey);
  const authorized = await call("POST", "/sessions/authorize", {
    key: serverKey,
    body: { nonce: session.nonce, rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:read", "token:use"] }] },
  });
  expect(authorized.status, authorized.text).toBe(200);
  return session.session_key;
}

describe("rule 8: what a browser's key learns of intents", () => {
  it("a public key is shown no fingerprint and no card or bank facts: only what identifies the intent", async () => {
    const tenant = await seedIntentTenant();
    for (const body of [
      { type: "card", data: CARD },
      { type: "card_number", data: CARD.number },
      // The bank type's mask shows the routing number whole: page script could have put a typed SSN there.
      { type: "bank", data: { routing_number: "021000021", account_number: "1234567890" } },
    ]) {
      const intent = await createIntent(tenant.browserKey, body);
      expect(Object.keys(intent).sort()).toEqual(["created_at", "created_by", "expires_at", "id", "tenant_id", "type"]);
    }
  });

  it("a public key reads and deletes no intent: one 403 for a live intent and an unknown id alike, and it cannot be granted more", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    for (const id of [intent.id, crypto.randomUUID()]) {
      const read = expectProblem(await call("GET", `/token-intents/${id}`, { key: tenant.browserKey }), 403);
      const deleted = expectProblem(await call("DELETE", `/token-intents/${id}`, { key: tenant.browserKey }), 403);
      expect(read.detail).toBe("This operation requires the permission token-intent:read");
      expect(deleted.detail).toBe("This operation requires the permission token-intent:delete");
    }
    for (const permission of ["token-intent:read", "token-intent:delete"]) {
      const refused = await call("POST", "/applications", {
        key: tenant.managementKey,
        body: { name: "page", type: "public", permissions: ["token-intent:create", permission] },
      });
      expectProblem(refused, 400);
    }
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });

  it("a public key converts no intent: a 403 before anything is read, for a live intent and an unknown id alike; nothing changes", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const before = await rowCounts();
    const live = expectProblem(await convertIntent(tenant.browserKey, intent.id), 403);
    const unknown = expectProblem(await convertIntent(tenant.browserKey, crypto.randomUUID()), 403);
    expect(live.detail).toBe(unknown.detail);
    expect(live.detail).toContain("private");
    expect(await rowCounts()).toEqual(before);
  });

  it("a session key, even one that reads and uses every token revealed, converts and detokenizes no intent", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const sessionKey = await revealingSessionKey(tenant.browserKey, tenant.serverKey);
    expectProblem(await convertIntent(sessionKey, intent.id), 403);
    // Answered as an unknown id is: the session learns nothing of which intents exist.
    const used = expectProblem(
      await call("POST", "/detokenize", { key: sessionKey, body: { n: `{{ token_intent: ${intent.id} | json: '$.data.number' }}` } }),
      400,
    );
    const unknown = expectProblem(
      await call("POST", "/detokenize", {
        key: sessionKey,
        body: { n: `{{ token_intent: ${crypto.randomUUID()} | json: '$.data.number' }}` },
      }),
      400,
    );
    expect(used.detail.replace(intent.id, "<id>")).toBe(unknown.detail.replace(/[0-9a-f-]{36}/, "<id>"));
    expect(JSON.stringify(used)).not.toContain(CARD.number);
    // Nor can a session hold an intent permission.
    const session = await createSession(tenant.browserKey);
    const granted = await call("POST", "/sessions/authorize", {
      key: tenant.serverKey,
      body: { nonce: session.nonce, permissions: ["token-intent:read"] },
    });
    expectProblem(granted, 400);
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });

  it("every intent a public key creates counts against its address's limit: past 60 a minute a 429, and nothing stored", async () => {
    const tenant = await seedIntentTenant();
    const limits = { PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT };
    const create = () =>
      callConfigured(limits, "POST", "/token-intents", {
        headers: { "SVC-API-KEY": tenant.browserKey, "CF-Connecting-IP": "198.51.100.90" },
        body: { type: "card_number", data: CARD.number },
      });
    // A rate limit counts in fixed windows of a minute: start this one's 61 requests early in one.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await create()).status);
    expect(statuses.slice(0, 60).every((status) => status === 201)).toBe(true);
    expect(statuses[60]).toBe(429);
    expect(await storedIntents(tenant.tenantId)).toBe(60);
  }, 60_000);

  it("an intent's data is bounded: more than 32 KiB of it is a 400 from any key, and nothing is stored", async () => {
    const tenant = await seedIntentTenant();
    for (const key of [tenant.browserKey, tenant.serverKey]) {
      const problem = expectProblem(
        await call("POST", "/token-intents", { key, body: { type: "token", data: { note: "x".repeat(32 * 1024) } } }),
        400,
      );
      expect(problem.errors).toEqual({ data: ["must be at most 32768 bytes as JSON"] });
    }
    // Just under the bound is taken.
    await createIntent(tenant.browserKey, { type: "token", data: "x".repeat(32 * 1024 - 2) });
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });
});

describe("rule 8: what a private key learns of intents", () => {
  it("an intent's facts and fingerprint follow the key's token rule for the type's container: the BIN under reveal only, nothing under redact", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const reader = (rules: object[], permissions: string[] = []) =>
      createApplication(tenant, { type: "private", permissions, rules: rules as never });
    const read = async (key: string) => (await callRoute("GET /token-intents/{id}", 200, { key, params: { id: intent.id } })).body;
    const withIntents = (transform: string, container = "/pci/") => [
      { priority: 1, container, transform, permissions: ["token:read", "token-intent:read"] },
    ];

    // With the BIN, the last four and a fingerprint, a key that creates intents finds a 16-digit number in about a thousand guesses.
    const revealed = await read((await reader(withIntents("reveal"))).key);
    expect(revealed.card).toEqual({ bin: "42424242", last4: "4242", expiration_month: 12, expiration_year: 2030, brand: "visa" });
    expect(revealed.fingerprint).toEqual(expect.any(String));
    const masked = await read((await reader(withIntents("mask"))).key);
    expect(masked.card).toEqual({ last4: "4242", expiration_month: 12, expiration_year: 2030, brand: "visa" });
    expect(masked.fingerprint).toBe(revealed.fingerprint);
    for (const key of [
      (await reader(withIntents("redact"))).key,
      (await reader(withIntents("reveal", "/general/"))).key,
      (await reader([], ["token-intent:read"])).key,
    ]) {
      expect(Object.keys(await read(key)).sort()).toEqual(["created_at", "created_by", "expires_at", "id", "tenant_id", "type"]);
    }
    // A creator is answered under its token:create rule: it sent the data, and sees no more of it than its rule shows.
    const creator = await reader([
      { priority: 1, container: "/", transform: "mask", permissions: ["token:create", "token-intent:create"] },
    ]);
    expect((await createIntent(creator.key)).card).not.toHaveProperty("bin");
  });
});

describe("rule 8: tenants and conversions", () => {
  it("another tenant's intent id is unknown: GET and DELETE 404, conversion 404, detokenization 400; the intent stays whole", async () => {
    const owner = await seedIntentTenant();
    const intruder = await seedIntentTenant();
    const intent = await createIntent(owner.browserKey);
    const unknownId = crypto.randomUUID();
    const answers = async (id: string) => ({
      read: expectProblem(await call("GET", `/token-intents/${id}`, { key: intruder.serverKey }), 404).detail,
      deleted: expectProblem(await call("DELETE", `/token-intents/${id}`, { key: intruder.serverKey }), 404).detail,
      converted: expectProblem(await convertIntent(intruder.serverKey, id), 404).detail,
      used: expectProblem(
        await call("POST", "/detokenize", { key: intruder.serverKey, body: { n: `{{ token_intent: ${id} | json: '$.data.number' }}` } }),
        400,
      ).detail,
    });
    const foreign = await answers(intent.id);
    const unknown = await answers(unknownId);
    for (const [answer, detail] of Object.entries(foreign)) {
      expect(detail.replace(intent.id, "<id>"), answer).toBe(unknown[answer as keyof typeof unknown].replace(unknownId, "<id>"));
    }
    expect(await tokenCount(intruder.tenantId)).toBe(0);
    const read = await callRoute("GET /token-intents/{id}", 200, { key: owner.serverKey, params: { id: intent.id } });
    expect(read.body.card?.last4).toBe("4242");
    const converted = await convertIntent(owner.serverKey, intent.id);
    expect(converted.status, converted.text).toBe(201);
  });

  it("an intent converts once: replayed, the conversion is a 404 that writes nothing", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    expect((await convertIntent(tenant.serverKey, intent.id)).status).toBe(201);
    const before = await rowCounts();
    const again = expectProblem(await convertIntent(tenant.serverKey, intent.id, { metadata: { again: "yes" } }), 404);
    expect(again.detail).toContain(intent.id);
    expect(again.detail).toMatch(/converted/);
    expect(await rowCounts()).toEqual(before);
    expect(await tokenCount(tenant.tenantId)).toBe(1);
  });

  it("two conversions of one intent at once make one token: the other is a 404", async () => {
    const tenant = await seedIntentTenant();
    for (let round = 0; round < 3; round++) {
      const intent = await createIntent(tenant.browserKey);
      const replies = await Promise.all([convertIntent(tenant.serverKey, intent.id), convertIntent(tenant.serverKey, intent.id)]);
      expect(replies.map((reply) => reply.status).sort()).toEqual([201, 404]);
    }
    expect(await tokenCount(tenant.tenantId)).toBe(3);
    expect(await storedIntents(tenant.tenantId)).toBe(0);
  });

  it("a react replayed by its idempotency key answers an intent's data only while the intent lives: after its conversion, a 409", async () => {
    const tenant = await seedIntentTenant();
    const formula = await createFormula(tenant, { code: "module.exports = async (req) => ({ raw: req.args });" });
    const reactor = await createReactor(tenant, formula.id);
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const intent = await createIntent(tenant.browserKey);
    const args = { number: `{{ token_intent: ${intent.id} | json: '$.data.number' }}` };
    const idempotent = { "SVC-IDEMPOTENCY-KEY": `react-${intent.id}` };
    const first = await react(caller.key, reactor.id, args, idempotent);
    expect(first.status, first.text).toBe(200);
    expect(first.text).toContain(CARD.number);
    const replayed = await react(caller.key, reactor.id, args, idempotent);
    expect(replayed.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(replayed.text).toContain(CARD.number);

    expect((await convertIntent(tenant.serverKey, intent.id)).status).toBe(201);
    const withheld = expectProblem(await react(caller.key, reactor.id, args, idempotent), 409);
    expect(withheld.detail).toContain(`Token intent ${intent.id} does not exist`);
    expect(JSON.stringify(withheld)).not.toContain(CARD.number);
  });

  it("a conversion that fails leaves the intent: a taken id, a refused container", async () => {
    const tenant = await seedIntentTenant();
    await convertIntent(tenant.serverKey, (await createIntent(tenant.browserKey)).id, { id: "customer-card-1" });
    const intent = await createIntent(tenant.browserKey);
    expectProblem(await convertIntent(tenant.serverKey, intent.id, { id: "customer-card-1" }), 409);
    expect(await storedIntents(tenant.tenantId)).toBe(1);
    const converted = await convertIntent(tenant.serverKey, intent.id, { id: "customer-card-2" });
    expect(converted.status, converted.text).toBe(201);
  });

  it("the intent permissions are a private key's: every one of them may be held, and none by a session", async () => {
    const tenant = await seedIntentTenant();
    const server = await createApplication(tenant, { type: "private", permissions: INTENT_PERMISSIONS });
    const intent = await createIntent(server.key);
    expect((await call("GET", `/token-intents/${intent.id}`, { key: server.key })).status).toBe(200);
  });
});
