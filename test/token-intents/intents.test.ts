import { describe, expect, it } from "vitest";
import { logEntries } from "../support/audit";
import { DATA_DATABASES, dataDatabaseOf } from "../support/context";
import { runCron } from "../support/cron";
import { call, callRoute, createApplication, dumpDatabase, expectProblem, rowCounts } from "../support/harness";
import {
  CARD,
  convertIntent,
  createIntent,
  expireIntent,
  INTENT_PERMISSIONS,
  seedIntentTenant,
  storedIntents,
} from "../support/token-intents";
import { createToken } from "../support/tokens";

/*
 * Token intents (POST/GET/DELETE /token-intents): data a key collected, held encrypted for a day, shown
 * only by its facts, and converted once into a token by a private key (POST /tokens {token_intent_id}).
 */

const DAY_MS = 24 * 60 * 60 * 1000;

describe("creating an intent", () => {
  it("a public key creates a card intent: 201 with its id, type, tenant, creator and times, expiring a day on; no data", async () => {
    const tenant = await seedIntentTenant();
    const before = Date.now();
    const reply = await callRoute("POST /token-intents", 201, { key: tenant.browserKey, body: { type: "card", data: CARD } });
    const intent = reply.body;
    expect(intent).toMatchObject({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), type: "card", tenant_id: tenant.tenantId });
    expect(typeof intent.created_by).toBe("string");
    const expiresAt = Date.parse(intent.expires_at!);
    expect(expiresAt - Date.parse(intent.created_at)).toBe(DAY_MS);
    expect(expiresAt).toBeGreaterThanOrEqual(before + DAY_MS);
    expect(reply.text).not.toContain("4242");
    expect(reply.text).not.toContain('"123"');
    expect(intent).not.toHaveProperty("data");
  });

  it("a private key's answer carries the card's facts and a fingerprint, never its number or cvc", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.serverKey);
    expect(intent.card).toEqual({ bin: "42424242", last4: "4242", expiration_month: 12, expiration_year: 2030, brand: "visa" });
    expect(intent.fingerprint).toEqual(expect.any(String));
    expect(JSON.stringify(intent)).not.toContain(CARD.number);
    // As a JSON string: "123" alone also turns up inside ids and timestamps by chance.
    expect(JSON.stringify(intent)).not.toContain(JSON.stringify(CARD.cvc));
  });

  it("a card number has its facts without an expiry, a bank its routing number and the last four of its account", async () => {
    const tenant = await seedIntentTenant();
    const number = await createIntent(tenant.serverKey, { type: "card_number", data: "378282246310005" });
    expect(number.card).toEqual({ bin: "378282", last4: "0005", brand: "american-express" });
    const bank = await createIntent(tenant.serverKey, {
      type: "bank",
      data: { routing_number: "021000021", account_number: "1234567890" },
    });
    expect(bank.bank).toEqual({ routing_number: "021000021", account_number_last4: "7890" });
    expect(bank).not.toHaveProperty("card");
    const ssn = await createIntent(tenant.serverKey, { type: "social_security_number", data: "123-45-6789" });
    expect(ssn).not.toHaveProperty("card");
    expect(ssn).not.toHaveProperty("bank");
  });

  it("the data must satisfy its type's rules: a 400 naming the member, never its value, and nothing is stored", async () => {
    const tenant = await seedIntentTenant();
    const before = await rowCounts();
    const problem = expectProblem(
      await call("POST", "/token-intents", {
        key: tenant.browserKey,
        body: { type: "card", data: { ...CARD, number: "4242424242424241" } },
      }),
      400,
    );
    expect(Object.keys(problem.errors!)).toEqual(["data.number"]);
    expect(JSON.stringify(problem)).not.toContain("4242424242424241");
    expect(await rowCounts()).toEqual(before);
  });

  it("takes type and data only: token members, an unknown type or missing data are a 400", async () => {
    const tenant = await seedIntentTenant();
    for (const body of [
      { type: "card", data: CARD, containers: ["/pci/"] },
      { type: "card", data: CARD, id: "chosen-id" },
      { type: "card", data: CARD, fingerprint_expression: "{{ data.number | slice: 0, 6 }}" },
      { type: "network_token", data: CARD },
      { type: "card" },
      { type: "token", data: null },
    ]) {
      expectProblem(await call("POST", "/token-intents", { key: tenant.browserKey, body }), 400);
    }
    expect(await storedIntents(tenant.tenantId)).toBe(0);
  });

  it("needs token-intent:create: a key with only token:create is refused", async () => {
    const tenant = await seedIntentTenant();
    const tokensOnly = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const problem = expectProblem(await call("POST", "/token-intents", { key: tokensOnly.key, body: { type: "card", data: CARD } }), 403);
    expect(problem.detail).toContain("token-intent:create");
  });

  it("stores the data encrypted: no table holds the number, its last four digits or the cvc", async () => {
    const tenant = await seedIntentTenant();
    const number = "6011000990139424";
    await createIntent(tenant.browserKey, { type: "card", data: { ...CARD, number, cvc: "9071" } });
    const row = await (await dataDatabaseOf(tenant.tenantId))
      .prepare("SELECT * FROM token_intents WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<Record<string, unknown>>();
    expect(row!.ciphertext).toMatch(/^v\d+\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    const dump = await dumpDatabase();
    // Short forms are looked for as whole JSON strings: four digits alone turn up by chance in the
    // dump's random ids and ciphertexts.
    for (const form of [number, '"9424"', '"9071"', '"601100"']) expect(dump, `${form} is stored in clear`).not.toContain(form);
  });
});

describe("reading and deleting an intent", () => {
  it("GET answers the intent as created; DELETE removes it, and then both are 404", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const read = await callRoute("GET /token-intents/{id}", 200, { key: tenant.serverKey, params: { id: intent.id } });
    expect(read.body).toMatchObject({ ...intent, card: { bin: "42424242", last4: "4242" } });
    expect(read.body.fingerprint).toEqual(expect.any(String));
    expect(read.text).not.toContain(CARD.number);

    await callRoute("DELETE /token-intents/{id}", 204, { key: tenant.serverKey, params: { id: intent.id } });
    expectProblem(await call("GET", `/token-intents/${intent.id}`, { key: tenant.serverKey }), 404);
    expectProblem(await call("DELETE", `/token-intents/${intent.id}`, { key: tenant.serverKey }), 404);
    expect(await storedIntents(tenant.tenantId)).toBe(0);
  });

  it("an id is matched in any case; one that is not a UUID is a 400", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    expect((await call("GET", `/token-intents/${intent.id.toUpperCase()}`, { key: tenant.serverKey })).status).toBe(200);
    expect(expectProblem(await call("GET", "/token-intents/not-an-id", { key: tenant.serverKey }), 400).errors).toEqual({
      id: ["must be a UUID"],
    });
  });

  it("GET needs token-intent:read and DELETE token-intent:delete", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const tokensOnly = await createApplication(tenant, { type: "private", permissions: ["token:read", "token:delete"] });
    expect(expectProblem(await call("GET", `/token-intents/${intent.id}`, { key: tokensOnly.key }), 403).detail).toContain(
      "token-intent:read",
    );
    expect(expectProblem(await call("DELETE", `/token-intents/${intent.id}`, { key: tokensOnly.key }), 403).detail).toContain(
      "token-intent:delete",
    );
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });

  it("an intent past its expiry is unknown everywhere, and the cron purges it", async () => {
    const tenant = await seedIntentTenant();
    const expired = await createIntent(tenant.browserKey);
    const live = await createIntent(tenant.browserKey);
    await expireIntent(tenant.tenantId, expired.id);
    expectProblem(await call("GET", `/token-intents/${expired.id}`, { key: tenant.serverKey }), 404);
    expectProblem(await call("DELETE", `/token-intents/${expired.id}`, { key: tenant.serverKey }), 404);
    expectProblem(await convertIntent(tenant.serverKey, expired.id), 404);
    expectProblem(
      await call("POST", "/detokenize", {
        key: tenant.serverKey,
        body: { n: `{{ token_intent: ${expired.id} | json: '$.data.number' }}` },
      }),
      400,
    );

    await runCron();
    expect(await storedIntents(tenant.tenantId)).toBe(1);
    expect((await call("GET", `/token-intents/${live.id}`, { key: tenant.serverKey })).status).toBe(200);
    // A day on, the cron purges the other one too.
    await runCron(Date.now() + DAY_MS + 60_000);
    expect(await storedIntents(tenant.tenantId)).toBe(0);
  });

  it("a card intent's cvc is kept as long as a card token's: the cron rewrites the intent without it", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const cvcOf = () =>
      call("POST", "/detokenize", { key: tenant.serverKey, body: { cvc: `{{ token_intent: ${intent.id} | json: '$.data.cvc' }}` } });
    expect((await cvcOf()).body).toEqual({ cvc: "123" });
    // The default retention is an hour: past it, reads leave the cvc out and the cron drops it from the ciphertext.
    const database = await dataDatabaseOf(tenant.tenantId);
    await database
      .prepare("UPDATE token_intents SET cvc_expires_at = ? WHERE tenant_id = ? AND id = ?")
      .bind(Date.now() - 1000, tenant.tenantId, intent.id)
      .run();
    expect((await cvcOf()).body).toEqual({ cvc: "" });
    const sealedBefore = await database.prepare("SELECT ciphertext FROM token_intents WHERE id = ?").bind(intent.id).first();
    await runCron();
    const row = await database.prepare("SELECT ciphertext, cvc_expires_at FROM token_intents WHERE id = ?").bind(intent.id).first();
    expect(row!.cvc_expires_at).toBeNull();
    expect(row!.ciphertext).not.toBe(sealedBefore!.ciphertext);
    const number = await call("POST", "/detokenize", {
      key: tenant.serverKey,
      body: { card: `{{ token_intent: ${intent.id} | json: '$.data' }}` },
    });
    expect(number.body).toEqual({ card: { number: CARD.number, expiration_month: 12, expiration_year: 2030 } });
  });
});

describe("converting an intent into a token (POST /tokens {token_intent_id})", () => {
  it("a private key makes a token of the intent's type and data, without the cvc, with the members it gives; the intent is gone", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const reply = await convertIntent(tenant.serverKey, intent.id, { metadata: { order: "42" }, containers: ["/pci/cards/"] });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body).toMatchObject({
      type: "card",
      containers: ["/pci/cards/"],
      metadata: { order: "42" },
      data: { number: CARD.number, expiration_month: 12, expiration_year: 2030 },
      _extras: { deduplicated: false },
    });
    expect(reply.body.data).not.toHaveProperty("cvc");
    expect(reply.body.id).not.toBe(intent.id);
    const token = await call("GET", `/tokens/${reply.body.id}`, { key: tenant.key });
    expect(token.body.data).toEqual({ number: CARD.number, expiration_month: 12, expiration_year: 2030 });
    expectProblem(await call("GET", `/token-intents/${intent.id}`, { key: tenant.serverKey }), 404);
    expect(await storedIntents(tenant.tenantId)).toBe(0);
  });

  it("the token's fingerprint is the intent's", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.serverKey);
    const token = await convertIntent(tenant.serverKey, intent.id);
    expect(token.body.fingerprint).toBe(intent.fingerprint);
  });

  it("answers the token as the caller's token:read rule shows it, not as its token:create rule: the caller never sent the data", async () => {
    const tenant = await seedIntentTenant();
    const converter = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:create"] },
        { priority: 2, container: "/", transform: "mask", permissions: ["token:read"] },
      ],
    });
    const intent = await createIntent(tenant.browserKey);
    const reply = await convertIntent(converter.key, intent.id);
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.data).toEqual({ number: "XXXXXXXXXXXX4242", expiration_month: 12, expiration_year: 2030 });
  });

  it("a converter whose token:read rule masks sets no expression of the data it never saw (mask, fingerprint, search index, alias): 403, the intent stays", async () => {
    const tenant = await seedIntentTenant();
    const converter = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:create"] },
        { priority: 2, container: "/", transform: "mask", permissions: ["token:read", "token:search"] },
      ],
    });
    const attempts: Record<string, unknown>[] = [
      // The mask the caller's masked answer then shows: the whole number.
      {
        mask: {
          number: "{{ data.number }}",
          expiration_month: "{{ data.expiration_month }}",
          expiration_year: "{{ data.expiration_year }}",
        },
      },
      // An index a data: search confirms any guess of the whole number with.
      { search_indexes: ["{{ data.number }}"] },
      // A fingerprint of a few digits: deduplication against tokenized guesses finds them.
      { fingerprint_expression: "{{ data.number | slice: 6, 6 }}" },
      // An alias id made of the number's hidden digits, shown as the token's id.
      { id: "{{ data.number | slice: 0, 12 }}-{{ data.number | last4 }}" },
    ];
    for (const members of attempts) {
      const intent = await createIntent(tenant.browserKey);
      const reply = await convertIntent(converter.key, intent.id, members);
      expect(reply.text, JSON.stringify(members)).not.toContain("42424242");
      expect(reply.status, `${JSON.stringify(members)}: ${reply.text}`).toBe(403);
      expect(await storedIntents(tenant.tenantId)).toBeGreaterThan(0);
      await call("DELETE", `/token-intents/${intent.id}`, { key: tenant.serverKey });
    }
  });

  it("needs token:create on the token's containers, and then leaves the intent as it was", async () => {
    const tenant = await seedIntentTenant();
    const narrow = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "reveal", permissions: ["token:create"] }],
    });
    const intent = await createIntent(tenant.browserKey);
    expect(expectProblem(await convertIntent(narrow.key, intent.id), 403).detail).toContain("/pci/high/");
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });

  it("with deduplicate_token, answers the existing token of the same card (200) and consumes the intent", async () => {
    const tenant = await seedIntentTenant();
    const existing = await createToken(tenant.key, { type: "card", data: { ...CARD, cvc: undefined } });
    const intent = await createIntent(tenant.browserKey);
    const reply = await convertIntent(tenant.serverKey, intent.id, { deduplicate_token: true });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toMatchObject({ id: existing.id, _extras: { deduplicated: true } });
    expect(await storedIntents(tenant.tenantId)).toBe(0);
  });

  it("type, data or an unknown member beside token_intent_id is a 400, and the intent stays", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    for (const members of [{ type: "card" }, { data: CARD }, { token_intent: intent.id }]) {
      expectProblem(await convertIntent(tenant.serverKey, intent.id, members), 400);
    }
    expect(expectProblem(await convertIntent(tenant.serverKey, "not-an-id"), 400).errors).toEqual({
      token_intent_id: ["must be a UUID"],
    });
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });

  it("search_indexes follow the intent's type: token and card intents take them, a bank intent refuses them", async () => {
    const tenant = await seedIntentTenant();
    const note = await createIntent(tenant.browserKey, { type: "token", data: "private note" });
    const converted = await convertIntent(tenant.serverKey, note.id, { search_indexes: ["{{ data }}"] });
    expect(converted.status, converted.text).toBe(201);
    const card = await createIntent(tenant.browserKey);
    const indexed = await convertIntent(tenant.serverKey, card.id, { search_indexes: ["{{ data.number | last4 }}"] });
    expect(indexed.status, indexed.text).toBe(201);
    const bank = await createIntent(tenant.browserKey, {
      type: "bank",
      data: { routing_number: "021000021", account_number: "1234567890" },
    });
    const refused = expectProblem(await convertIntent(tenant.serverKey, bank.id, { search_indexes: ["{{ data.account_number }}"] }), 400);
    expect(Object.keys(refused.errors!)).toEqual(["search_indexes"]);
  });

  it("an idempotent conversion replayed answers the same token", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const headers = { "SVC-IDEMPOTENCY-KEY": `convert-${intent.id}` };
    const first = await call("POST", "/tokens", { key: tenant.serverKey, body: { token_intent_id: intent.id }, headers });
    const again = await call("POST", "/tokens", { key: tenant.serverKey, body: { token_intent_id: intent.id }, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get("SVC-Idempotent-Replayed")).toBe("true");
  });

  it("a replayed conversion never shows the card of a token deleted since: a fresh request would not (its intent is gone)", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const headers = { "SVC-IDEMPOTENCY-KEY": `convert-deleted-${intent.id}` };
    const first = await call("POST", "/tokens", { key: tenant.serverKey, body: { token_intent_id: intent.id }, headers });
    expect(first.status, first.text).toBe(201);
    expect(first.body.data.number).toBe(CARD.number);
    expect((await call("DELETE", `/tokens/${first.body.id}`, { key: tenant.key })).status).toBe(204);
    expectProblem(await call("GET", `/tokens/${first.body.id}`, { key: tenant.serverKey }), 404);

    const again = await call("POST", "/tokens", { key: tenant.serverKey, body: { token_intent_id: intent.id }, headers });
    // As when the answer was never saved (test/foundation/idempotency-crash.test.ts): processed, not replayed.
    expect(again.text).not.toContain(CARD.number);
    expect(expectProblem(again, 409).detail).toMatch(/was processed, but its answer is not replayed/);
  });
});

describe("token intent expressions: {{ token_intent: <id> | … }}", () => {
  it("reads the intent's data (and id and type) wherever tokens are detokenized", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const reply = await call("POST", "/detokenize", {
      key: tenant.serverKey,
      body: {
        number: `{{ token_intent: ${intent.id} | json: '$.data.number' }}`,
        expiry: `{{ token_intent: ${intent.id} | json: "$.data" | card_exp: "MM/YY" }}`,
        type: `{{token_intent:${intent.id}|json:'$.type'}}`,
        whole: `{{ token_intent: ${intent.id} }}`,
      },
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toMatchObject({ number: CARD.number, expiry: "12/30", type: "card" });
    expect(reply.body.whole).toMatchObject({ id: intent.id, type: "card", data: CARD });
  });

  it("needs token:use on the container the intent's type puts its tokens in, under that rule's transform", async () => {
    const tenant = await seedIntentTenant();
    const intent = await createIntent(tenant.browserKey);
    const expression = { n: `{{ token_intent: ${intent.id} | json: '$.data.number' }}` };
    const elsewhere = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "reveal", permissions: ["token:use"] }],
    });
    expectProblem(await call("POST", "/detokenize", { key: elsewhere.key, body: expression }), 403);
    const masked = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:use"] }],
    });
    expect((await call("POST", "/detokenize", { key: masked.key, body: expression })).body).toEqual({ n: "XXXXXXXXXXXX4242" });
  });

  it("an unknown intent id is a 400, as an unknown token is; a malformed one is refused before anything is read", async () => {
    const tenant = await seedIntentTenant();
    const unknown = `{{ token_intent: ${crypto.randomUUID()} }}`;
    expectProblem(await call("POST", "/detokenize", { key: tenant.serverKey, body: { n: unknown } }), 400);
    expectProblem(await call("POST", "/detokenize", { key: tenant.serverKey, body: { n: "{{ token_intent: not-an-id }}" } }), 400);
  });
});

describe("the audit log", () => {
  it("records an intent's create, read, delete and conversion, never its data", async () => {
    const tenant = await seedIntentTenant();
    const deleted = await createIntent(tenant.browserKey);
    await call("GET", `/token-intents/${deleted.id}`, { key: tenant.serverKey });
    await call("DELETE", `/token-intents/${deleted.id}`, { key: tenant.serverKey });
    const converted = await createIntent(tenant.browserKey);
    expect((await convertIntent(tenant.serverKey, converted.id)).status).toBe(201);
    const entries = await logEntries(tenant, 5, { entity_type: "token-intent" });
    expect(entries.map((entry) => `${entry.operation} ${entry.entity_id} ${entry.status}`)).toEqual([
      `create ${deleted.id} 201`,
      `read ${deleted.id} 200`,
      `delete ${deleted.id} 204`,
      `create ${converted.id} 201`,
      `convert ${converted.id} 201`,
    ]);
    expect(JSON.stringify(entries)).not.toContain(CARD.number);
  });
});

describe("what intents leave in the databases", () => {
  it("are stored in the tenant's data database only", async () => {
    const tenant = await seedIntentTenant();
    await createIntent(tenant.browserKey);
    let everywhere = 0;
    for (const database of DATA_DATABASES) {
      const row = await database.prepare("SELECT count(*) AS n FROM token_intents WHERE tenant_id = ?").bind(tenant.tenantId).first();
      everywhere += row!.n as number;
    }
    expect(everywhere).toBe(1);
    expect(await storedIntents(tenant.tenantId)).toBe(1);
  });

  it("a permission list names the intent permissions for private keys, and only create for public keys", async () => {
    const tenant = await seedIntentTenant();
    const listed = await call("GET", "/permissions?application_type=public", { key: tenant.managementKey });
    expect(listed.body.map((permission: { type: string }) => permission.type)).toContain("token-intent:create");
    expect(listed.body.map((permission: { type: string }) => permission.type)).not.toContain("token-intent:read");
    const refused = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "page", type: "public", permissions: ["token-intent:read"] },
    });
    expectProblem(refused, 400);
    expect(INTENT_PERMISSIONS.length).toBe(3);
  });
});
