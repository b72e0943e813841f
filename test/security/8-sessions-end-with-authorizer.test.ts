import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { call, callRoute, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/*
 * Rule 8, sessions (issue 34): a session never outlives the key that authorized it. The attack: a
 * key expiring in 5 s authorized a 23-hour reveal session, and after that key expired and its
 * application was deleted the session still read and listed tokens. A session's expires_at is held
 * to its authorizer's expiry, and its key answers 401 once the authorizer is revoked or deleted:
 * at once in the isolate that made the change, elsewhere within the credential cache's time to live.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// As test/foundation/credential-cache.test.ts: a one-second time to live, waited out.
const TTL = { CREDENTIAL_CACHE_TTL_MS: "1000" };
const PAST_TTL_MS = 1_200;
const LONG = { CREDENTIAL_CACHE_TTL_MS: "60000" };
const NO_CACHE = { CREDENTIAL_CACHE_TTL_MS: "0" };

/** A merchant whose server application reveals /cards/ and may authorize sessions; sessions come from its public key. */
interface Merchant extends TokenTenant {
  publicKey: string;
  server: { id: string; key: string };
  card: { id: string };
}

const SERVER_RULES = [
  { priority: 1, container: "/cards/", transform: "reveal" as const, permissions: ["token:read", "token:search", "token:use"] },
  { priority: 2, container: "/", transform: "mask" as const, permissions: ["token:read", "session:authorize"] },
];

async function seedMerchant(): Promise<Merchant> {
  const tenant = await seedTokenTenant();
  const publicKey = (await createApplication(tenant, { type: "public", permissions: ["token:create"] })).key;
  const server = await createApplication(tenant, { type: "private", rules: SERVER_RULES });
  const card = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/cards/"] });
  return { ...tenant, publicKey, server, card };
}

/** Another key of the merchant's server application, expiring at `expiresAt` when given. */
async function serverKey(merchant: Merchant, expiresAt?: number) {
  const reply = await callRoute("POST /applications/{id}/keys", 201, {
    key: merchant.managementKey,
    params: { id: merchant.server.id },
    body: expiresAt === undefined ? {} : { expires_at: new Date(expiresAt).toISOString() },
  });
  return { id: reply.body.id, key: reply.body.key! };
}

const revealCards = [{ priority: 1, container: "/cards/", transform: "reveal", permissions: ["token:read", "token:search", "token:use"] }];

/** A session of the merchant's page, authorized with `authorizerKey`; the authorize reply too. */
async function sessionAuthorizedBy(merchant: Merchant, authorizerKey: string, extra: Record<string, unknown> = {}) {
  const session = (await callRoute("POST /sessions", 201, { key: merchant.publicKey })).body;
  const reply = await call("POST", "/sessions/authorize", {
    key: authorizerKey,
    body: { nonce: session.nonce, rules: revealCards, ...extra },
  });
  return { session, reply };
}

/** The session key listing and searching tokens, on a worker with the cache settings given: the statuses. */
async function listsWith(settings: Record<string, string>, sessionKey: string) {
  const headers = { "SVC-API-KEY": sessionKey };
  return [
    (await callConfigured(settings, "GET", "/tokens?size=1", { headers })).status,
    (await callConfigured(settings, "POST", "/tokens/search", { headers, body: { query: "type:card_number" } })).status,
  ];
}

async function readCard(settings: Record<string, string>, merchant: Merchant, sessionKey: string) {
  return callConfigured(settings, "GET", `/tokens/${merchant.card.id}`, { headers: { "SVC-API-KEY": sessionKey } });
}

describe("rule 8: a session ends with the key that authorized it", () => {
  it("an authorizer key that expires in seconds cannot grant a session past its own expiry: a later expires_at is a 400", async () => {
    const merchant = await seedMerchant();
    const keyEnd = Date.now() + 5_000;
    const shortLived = await serverKey(merchant, keyEnd);
    const { session, reply } = await sessionAuthorizedBy(merchant, shortLived.key, {
      expires_at: new Date(Date.now() + 23 * 3_600_000).toISOString(),
    });
    const refused = expectProblem(reply, 400);
    expect(refused.errors?.expires_at?.join(" ")).toMatch(/authoriz/);
    expectProblem(await readCard(NO_CACHE, merchant, session.session_key), 401);
  });

  it("a session authorized without expires_at by a key ending sooner than the default ends with the key, and is refused past it", async () => {
    const merchant = await seedMerchant();
    const keyEnd = Date.now() + 3_000;
    const shortLived = await serverKey(merchant, keyEnd);
    const { session, reply } = await sessionAuthorizedBy(merchant, shortLived.key);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const own = await callRoute("GET /applications/key", 200, { key: session.session_key });
    expect(Date.parse(own.body.expires_at!)).toBeLessThanOrEqual(keyEnd);
    // Cached for a minute, read once before the end: the end is still checked on every request.
    expect((await readCard(LONG, merchant, session.session_key)).status).toBe(200);
    await sleep(keyEnd - Date.now() + 200);
    expectProblem(await readCard(LONG, merchant, session.session_key), 401);
    expectProblem(await readCard(NO_CACHE, merchant, session.session_key), 401);
  }, 30_000);

  it("revoking the authorizer key ends its sessions: at once without the cache, within the time to live with it", async () => {
    const merchant = await seedMerchant();
    const authorizer = await serverKey(merchant);
    const { session, reply } = await sessionAuthorizedBy(merchant, authorizer.key);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect((await readCard(TTL, merchant, session.session_key)).status).toBe(200);
    expect(await listsWith(TTL, session.session_key)).toEqual([200, 200]);

    // Revoked through `call` (the worker as SELF); the reads go through callConfigured's module instance, whose
    // cache may hear of it only through D1, as it would hear of another isolate's revocation.
    expect(
      (await call("DELETE", `/applications/${merchant.server.id}/keys/${authorizer.id}`, { key: merchant.managementKey })).status,
    ).toBe(204);
    expectProblem(await readCard(NO_CACHE, merchant, session.session_key), 401);
    await sleep(PAST_TTL_MS);
    expectProblem(await readCard(TTL, merchant, session.session_key), 401);
    for (const status of await listsWith(TTL, session.session_key)) expect(status).toBe(401);
    // The server application itself, through its other key, is untouched.
    expect((await call("GET", `/tokens/${merchant.card.id}`, { key: merchant.server.key })).status).toBe(200);
  }, 30_000);

  it("deleting the authorizer's application ends its sessions, and a revocation in this isolate applies at once", async () => {
    const merchant = await seedMerchant();
    const { session, reply } = await sessionAuthorizedBy(merchant, merchant.server.key);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect((await readCard(LONG, merchant, session.session_key)).status).toBe(200);

    const deleted = await callConfigured(LONG, "DELETE", `/applications/${merchant.server.id}`, {
      headers: { "SVC-API-KEY": merchant.managementKey },
    });
    expect(deleted.status).toBe(204);
    expectProblem(await readCard(LONG, merchant, session.session_key), 401);
    expectProblem(await readCard(NO_CACHE, merchant, session.session_key), 401);
  });

  it("deleting the authorizer's application elsewhere ends its sessions within the time to live", async () => {
    const merchant = await seedMerchant();
    const { session, reply } = await sessionAuthorizedBy(merchant, merchant.server.key);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect((await readCard(TTL, merchant, session.session_key)).status).toBe(200);

    expect((await call("DELETE", `/applications/${merchant.server.id}`, { key: merchant.managementKey })).status).toBe(204);
    await sleep(PAST_TTL_MS);
    expectProblem(await readCard(TTL, merchant, session.session_key), 401);
    for (const status of await listsWith(TTL, session.session_key)) expect(status).toBe(401);
  }, 30_000);

  it("regenerating the authorizer application's keys ends the sessions its old keys authorized", async () => {
    const merchant = await seedMerchant();
    const { session, reply } = await sessionAuthorizedBy(merchant, merchant.server.key);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect((await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key })).status).toBe(200);
    await callRoute("POST /applications/{id}/regenerate", 200, { key: merchant.managementKey, params: { id: merchant.server.id } });
    expectProblem(await readCard(NO_CACHE, merchant, session.session_key), 401);
  });
});
