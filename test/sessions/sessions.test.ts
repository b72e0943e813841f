import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/crypto/secrets";
import { SESSIONS } from "../../src/limits";
import { signNonce } from "../../src/sessions/nonce";
import { entryWhere } from "../support/audit";
import { callConfigured } from "../support/configured";
import { keysOfTenant } from "../support/context";
import { runCron } from "../support/cron";
import { call, callRoute, createApplication, expectProblem, rowCounts } from "../support/harness";
import { withoutIds } from "../support/random-text";
import { searchIds } from "../support/search";
import { createSession, type Merchant, seedMerchant } from "../support/sessions";
import { VISA } from "../support/tokens";

/*
 * Sessions (issue 27, step 3): a public key creates one, a private key holding session:authorize
 * authorizes its nonce with no more than it holds, and the session key then works as an expiring
 * application until its end. One `it` per rule, each an attack on it.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rules that let a session reveal one token, read and detokenize it, by id within /cards/. */
const revealOne = (id: string) => [
  {
    priority: 1,
    conditions: [
      { attribute: "id", operator: "equals", value: id },
      { attribute: "container", operator: "starts_with", value: "/cards/" },
    ],
    transform: "reveal",
    permissions: ["token:read", "token:search", "token:use"],
  },
];

function authorize(key: string, body: Record<string, unknown>) {
  return call("POST", "/sessions/authorize", { key, body });
}

let merchant: Merchant;
beforeAll(async () => {
  merchant = await seedMerchant();
});

describe("sessions", () => {
  it("answer a session key, a nonce and an end a minute on, with 201", async () => {
    const before = Date.now();
    const session = await createSession(merchant.publicKey);
    expect(session.session_key).toMatch(/^key_/);
    expect(session.nonce).toMatch(/^[A-Za-z0-9_-]{124}$/);
    const end = Date.parse(session.expires_at);
    expect(end).toBeGreaterThanOrEqual(before + 60_000 - 1_000);
    expect(end).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it("are created only with a public application's key", async () => {
    expectProblem(await call("POST", "/sessions", { key: merchant.serverKey }), 403);
    expectProblem(await call("POST", "/sessions", { key: merchant.managementKey }), 403);
  });

  it("a session key authenticates nothing until authorized", async () => {
    const session = await createSession(merchant.publicKey);
    for (const [method, path] of [
      ["GET", `/tokens/${merchant.card.id}`],
      ["GET", "/tokens"],
      ["GET", "/applications/key"],
      ["POST", "/sessions"],
    ] as const) {
      expectProblem(await call(method, path, { key: session.session_key }), 401);
    }
  });

  it("the whole flow: authorized for one token, the session reads it revealed and becomes an expiring application", async () => {
    const session = await createSession(merchant.publicKey);
    const reply = await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.card.id) });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const token = await callRoute("GET /tokens/{id}", 200, { key: session.session_key, params: { id: merchant.card.id } });
    expect(token.body.data).toBe(VISA);
    const own = await callRoute("GET /applications/key", 200, { key: session.session_key });
    expect(own.body).toMatchObject({
      type: "expiring",
      expires_at: session.expires_at,
      permissions: ["token:read", "token:search", "token:use"],
    });
    const listed = await call("GET", `/applications/${own.body.id}`, { key: merchant.managementKey });
    expect(listed.body).toMatchObject({ type: "expiring", expires_at: session.expires_at, rules: revealOne(merchant.card.id) });
  });

  it("a cached unknown session key does not keep refusing once authorized", async () => {
    const session = await createSession(merchant.publicKey);
    const read = () =>
      callConfigured({ CREDENTIAL_CACHE_TTL_MS: "60000" }, "GET", `/tokens/${merchant.card.id}`, {
        headers: { "SVC-API-KEY": session.session_key },
      });
    expect((await read()).status).toBe(401);
    expect((await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.card.id) })).status).toBe(200);
    expect((await read()).status).toBe(200);
  });

  it("conditions limit the session to the named token: get, list, search and detokenize show no other", async () => {
    const session = await createSession(merchant.publicKey);
    expect((await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.card.id) })).status).toBe(200);
    const key = session.session_key;
    const other = await call("GET", `/tokens/${merchant.otherCard.id}`, { key });
    // A browser's key is told nothing of a token it may not read: the 404 of an unknown id (rule 8).
    expectProblem(other, 404);
    // The detail names the token by its random id, which may hold any four digits.
    expect(withoutIds(JSON.stringify(other.body))).not.toContain("5555");
    const listed = await callRoute("GET /tokens", 200, { key });
    expect(listed.body.data).toEqual([]);
    expect(await searchIds(key, "type:card_number")).toEqual([]);
    const detokenized = await call("POST", "/detokenize", { key, body: { other: `{{ ${merchant.otherCard.id} }}` } });
    // As for an unknown id (rule 8).
    expect(detokenized.status).toBe(400);
    expect(withoutIds(JSON.stringify(detokenized.body))).not.toContain("5555");
    const own = await call("POST", "/detokenize", { key, body: { card: `{{ ${merchant.card.id} }}` } });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body).toEqual({ card: VISA });
  });

  it("grants nothing the authorizer lacks: a permission, a container, or a more revealing transform is a 403 naming it", async () => {
    const attempts: [Record<string, unknown>, RegExp][] = [
      [{ permissions: ["token:delete"] }, /token:delete/],
      [{ permissions: ["token:use"] }, /token:use on container \//],
      [
        { rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:read"] }] },
        /reveal for token:read on container \/ reveals more/,
      ],
      [
        {
          rules: [
            {
              priority: 1,
              conditions: [{ attribute: "id", operator: "equals", value: merchant.card.id }],
              transform: "reveal",
              permissions: ["token:read"],
            },
          ],
        },
        /reveals more than the authorizing application's mask/,
      ],
      [{ rules: [{ priority: 1, container: "/bank/", transform: "mask", permissions: ["token:use"] }] }, /token:use on container \/bank\//],
    ];
    for (const [grants, message] of attempts) {
      const session = await createSession(merchant.publicKey);
      const refused = expectProblem(await authorize(merchant.serverKey, { nonce: session.nonce, ...grants }), 403);
      expect(refused.detail, JSON.stringify(grants)).toMatch(message);
      expectProblem(await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key }), 401);
    }
  });

  it("a session can hold neither a management permission nor session:authorize", async () => {
    const session = await createSession(merchant.publicKey);
    for (const permission of ["session:authorize", "application:read"]) {
      expectProblem(await authorize(merchant.serverKey, { nonce: session.nonce, permissions: [permission] }), 400);
    }
  });

  it("needs session:authorize", async () => {
    const session = await createSession(merchant.publicKey);
    const refused = expectProblem(await authorize(merchant.key, { nonce: session.nonce, permissions: ["token:read"] }), 403);
    expect(refused.detail).toContain("session:authorize");
  });

  it("a nonce authorizes once", async () => {
    const session = await createSession(merchant.publicKey);
    expect((await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.card.id) })).status).toBe(200);
    const again = expectProblem(
      await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.otherCard.id) }),
      409,
    );
    expect(again.detail).toContain("once");
    expectProblem(await call("GET", `/tokens/${merchant.otherCard.id}`, { key: session.session_key }), 404);
  });

  it("another tenant's nonce is as unknown as a wrong one", async () => {
    const session = await createSession(merchant.publicKey);
    const intruder = await seedMerchant();
    const foreign = expectProblem(await authorize(intruder.serverKey, { nonce: session.nonce, permissions: ["token:read"] }), 404);
    const wrong = expectProblem(await authorize(intruder.serverKey, { nonce: "4J7SiRvfADwJ9ZqwviJJs8", permissions: ["token:read"] }), 404);
    expect(foreign.detail).toBe(wrong.detail);
    expectProblem(await call("GET", `/tokens/${intruder.card.id}`, { key: session.session_key }), 401);
  });

  it("answers 401 once the session ends, and the cron purges it with its expiring application", async () => {
    const session = await createSession(merchant.publicKey);
    const end = new Date(Date.now() + 1_500).toISOString();
    const reply = await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.card.id), expires_at: end });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const own = await callRoute("GET /applications/key", 200, { key: session.session_key });
    expect((await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key })).status).toBe(200);
    await sleep(1_600);
    expectProblem(
      await callConfigured({ CREDENTIAL_CACHE_TTL_MS: "60000" }, "GET", `/tokens/${merchant.card.id}`, {
        headers: { "SVC-API-KEY": session.session_key },
      }),
      401,
    );
    expectProblem(await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key }), 401);
    // The cron keeps an ended session until its nonce has ended too (it keeps the nonce to one authorization).
    await runCron(Date.now() + SESSIONS.defaultLifetimeMs);
    expectProblem(await call("GET", `/applications/${own.body.id}`, { key: merchant.managementKey }), 404);
  });

  it("a session cannot be authorized after its minute, nor for longer than a day", async () => {
    const session = await createSession(merchant.publicKey);
    const tooLate = new Date(Date.now() + 25 * 3_600_000).toISOString();
    expectProblem(await authorize(merchant.serverKey, { nonce: session.nonce, permissions: ["token:read"], expires_at: tooLate }), 400);
    // A nonce the vault signed 200 s ago, as POST /sessions did then: waiting a minute would take the suite as long.
    const now = Date.now();
    const ended = await signNonce(await keysOfTenant(merchant.tenantId), {
      applicationId: merchant.publicApplicationId,
      createdAt: now - 200_000,
      expiresAt: now - 20_000,
      keyHash: await sha256Hex(`key_${crypto.randomUUID()}`),
    });
    const before = await rowCounts();
    const refused = expectProblem(await authorize(merchant.serverKey, { nonce: ended, permissions: ["token:read"] }), 409);
    expect(refused.detail).toContain("ended");
    expect(await rowCounts()).toEqual(before);
  });

  it("an expiring application cannot be changed through PUT /applications", async () => {
    const session = await createSession(merchant.publicKey);
    expect((await authorize(merchant.serverKey, { nonce: session.nonce, rules: revealOne(merchant.card.id) })).status).toBe(200);
    const own = await callRoute("GET /applications/key", 200, { key: session.session_key });
    const changed = await call("PUT", `/applications/${own.body.id}`, {
      key: merchant.managementKey,
      body: { name: "wider", rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:read"] }] },
    });
    expectProblem(changed, 409);
  });

  it("POST /sessions counts against the public key's limit per client address: past it a 429 writes no session", async () => {
    const { key } = await createApplication(merchant, { type: "public", permissions: ["token:create"] });
    // The limit counts in fixed windows of a minute: all the requests must fall in one.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 20_000) await sleep(left + 100);
    const limits = { PUBLIC_CLIENT_RATE_LIMIT: env.DEFAULT_PUBLIC_CLIENT_RATE_LIMIT };
    const headers = { "SVC-API-KEY": key, "CF-Connecting-IP": "198.51.100.27" };
    for (let i = 0; i < 60; i++) expect((await callConfigured(limits, "POST", "/sessions", { headers })).status).toBe(201);
    const before = await rowCounts();
    const refused = expectProblem(await callConfigured(limits, "POST", "/sessions", { headers }), 429);
    expect(refused.detail).toContain("public key");
    expect(await rowCounts()).toEqual(before);
  }, 60_000);

  it("are recorded in the audit log: the session created, the expiring application its authorization made", async () => {
    const tenant = await seedMerchant();
    const session = await createSession(tenant.publicKey);
    expect((await authorize(tenant.serverKey, { nonce: session.nonce, rules: revealOne(tenant.card.id) })).status).toBe(200);
    const own = await callRoute("GET /applications/key", 200, { key: session.session_key });
    const created = await entryWhere(tenant, { entity_type: "session" }, (entry) => entry.operation === "create");
    expect(created).toMatchObject({ status: 201, message: "Created session", actor_type: "application" });
    const authorized = await entryWhere(tenant, { entity_type: "application" }, (entry) => entry.entity_id === own.body.id);
    expect(authorized).toMatchObject({ operation: "create", status: 200 });
    expect(authorized?.message).toContain("Authorized session as an expiring application");
    // Nothing is stored between the two: the session's id comes from its key's digest, the same both times.
    expect(authorized?.message).toContain(`for session ${created?.entity_id}`);
    expect(JSON.stringify([created, authorized])).not.toContain(session.session_key);
    expect(JSON.stringify([created, authorized])).not.toContain(session.nonce);
  }, 60_000);
});
