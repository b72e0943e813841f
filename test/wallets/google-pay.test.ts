import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { TOKENS } from "../../src/limits";
import { entryWhere } from "../support/audit";
import { runCron } from "../support/cron";
import { CRYPTOGRAM_3DS, flipByte, PAN_ONLY, paymentMessage, type SealedToken, sealEcV2 } from "../support/google-pay";
import { call, createApplication, dumpDatabase, expectProblem, rowCounts, seedTenant, type Tenant } from "../support/harness";
import { expectProxyError, invoke, loopback } from "../support/proxies";
import { createCodeReactor, react } from "../support/reactors";
import { storedIntents } from "../support/token-intents";
import { ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64, MERCHANT_PRIVATE_KEY_PKCS8_BASE64 } from "./tink-ecv2-vectors";

/*
 * POST /google-pay and the merchant registration it decrypts for, through HTTP: tokens are sealed now
 * with Tink's published test keys (the vault's root signing key in tests is Tink's ECv2 test key,
 * vitest.config.ts), to the merchant key Tink publishes, for the recipient `merchant:<merchant id>`.
 */

const MERCHANT_IDENTIFIER = "12345678901234567890";
const RECIPIENT = `merchant:${MERCHANT_IDENTIFIER}`;
const DAY_MS = 24 * 60 * 60 * 1000;

let tenant: Tenant;
let merchantId: string;
let serverKey: string;

async function registerMerchant(key: string, identifier = MERCHANT_IDENTIFIER): Promise<string> {
  const reply = await call("POST", "/google-pay/merchant-registration", { key, body: { merchant_identifier: identifier } });
  expect(reply.status, reply.text).toBe(201);
  return reply.body.id;
}

async function addKey(key: string, merchant: string, pkcs8: string) {
  return call("POST", `/google-pay/merchant-registration/${merchant}/certificates`, { key, body: { merchant_certificate_data: pkcs8 } });
}

const decrypt = (key: string, token: unknown, members: Record<string, unknown> = {}) =>
  call("POST", "/google-pay", { key, body: { google_payment_data: token, ...members } });

/** The refusal's stable code, with nothing stored by the request. */
async function expectRefused(token: unknown, code: string, key = serverKey): Promise<void> {
  const before = await rowCounts();
  const problem = expectProblem(await decrypt(key, token), 400);
  expect(problem.errors?.google_payment_data).toEqual([code]);
  expect(await rowCounts()).toEqual(before);
}

const panOnlyToken = (overrides: Partial<Parameters<typeof sealEcV2>[1]> = {}) =>
  sealEcV2(paymentMessage(PAN_ONLY), { recipientId: RECIPIENT, ...overrides });

/** The uncompressed public point (base64) of a PKCS #8 P-256 private key. */
async function rawPublicKeyOf(pkcs8: string): Promise<string> {
  const bytes = Uint8Array.from(atob(pkcs8), (char) => char.charCodeAt(0));
  const jwk = (await crypto.subtle.exportKey(
    "jwk",
    await crypto.subtle.importKey("pkcs8", bytes, { name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]),
  )) as JsonWebKey;
  const coordinate = (value: string) => Buffer.from(value, "base64url");
  return Buffer.concat([Buffer.from([4]), coordinate(jwk.x!), coordinate(jwk.y!)]).toString("base64");
}

/** The token with its signedMessage's member changed; the signature is left as it was. */
function withMessageMember(token: SealedToken, member: string, change: (value: string) => string): SealedToken {
  const message = JSON.parse(token.signedMessage);
  message[member] = change(message[member]);
  return { ...token, signedMessage: JSON.stringify(message) };
}

beforeAll(async () => {
  tenant = await seedTenant();
  merchantId = await registerMerchant(tenant.managementKey);
  expect((await addKey(tenant.managementKey, merchantId, MERCHANT_PRIVATE_KEY_PKCS8_BASE64)).status).toBe(201);
  serverKey = (
    await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["google-pay:create", "token:create", "token-intent:read"] },
      ],
    })
  ).key;
});

describe("merchant registration", () => {
  it("registers a merchant, reads it, and keeps its private key sealed: only a fingerprint is shown", async () => {
    const id = await registerMerchant(tenant.managementKey, "merchant-two");
    const read = await call("GET", `/google-pay/merchant-registration/${id}`, { key: tenant.managementKey });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id, tenant_id: tenant.tenantId, merchant_identifier: "merchant-two" });
    const added = await addKey(tenant.managementKey, id, ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64);
    expect(added.status, added.text).toBe(201);
    expect(added.body.merchant_certificate_fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(added.text).not.toContain("MIGHAgEA");
    const key = await call("GET", `/google-pay/merchant-registration/${id}/certificates/${added.body.id}`, { key: tenant.managementKey });
    expect(key.body).toEqual(added.body);
    // The private scalar's base64 never appears in any row of any database.
    const dump = await dumpDatabase();
    expect(dump).not.toContain(ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64.slice(40, 80));
    expect((await call("DELETE", `/google-pay/merchant-registration/${id}`, { key: tenant.managementKey })).status).toBe(204);
    expect(
      (await call("GET", `/google-pay/merchant-registration/${id}/certificates/${added.body.id}`, { key: tenant.managementKey })).status,
    ).toBe(404);
  });

  it("refuses a merchant key that is not an EC P-256 private key, storing nothing", async () => {
    const before = await rowCounts();
    for (const data of ["not a key", "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49", btoa("x".repeat(100))]) {
      const problem = expectProblem(await addKey(tenant.managementKey, merchantId, data), 400);
      expect(problem.errors?.merchant_certificate_data).toBeDefined();
    }
    const withPassword = await call("POST", `/google-pay/merchant-registration/${merchantId}/certificates`, {
      key: tenant.managementKey,
      body: { merchant_certificate_data: MERCHANT_PRIVATE_KEY_PKCS8_BASE64, merchant_certificate_password: "secret" },
    });
    expectProblem(withPassword, 400);
    expect(await rowCounts()).toEqual(before);
  });

  it("needs google-pay-merchant:create, read and delete, which only management applications hold", async () => {
    const reader = (await createApplication(tenant, { type: "management", permissions: ["google-pay-merchant:read"] })).key;
    expect((await call("GET", `/google-pay/merchant-registration/${merchantId}`, { key: reader })).status).toBe(200);
    const refusedCreate = expectProblem(
      await call("POST", "/google-pay/merchant-registration", { key: reader, body: { merchant_identifier: "x" } }),
      403,
    );
    expect(refusedCreate.detail).toMatch(/google-pay-merchant:create/);
    expect(expectProblem(await addKey(reader, merchantId, MERCHANT_PRIVATE_KEY_PKCS8_BASE64), 403).detail).toMatch(
      /google-pay-merchant:create/,
    );
    const refusedDelete = expectProblem(await call("DELETE", `/google-pay/merchant-registration/${merchantId}`, { key: reader }), 403);
    expect(refusedDelete.detail).toMatch(/google-pay-merchant:delete/);
    for (const type of ["private", "public"]) {
      const refused = await call("POST", "/applications", {
        key: tenant.managementKey,
        body: { name: "server", type, permissions: ["google-pay-merchant:read"] },
      });
      expectProblem(refused, 400);
    }
  });

  it("holds at most 5 keys per registration", async () => {
    const id = await registerMerchant(tenant.managementKey, "merchant-full");
    for (let i = 0; i < 5; i++) expect((await addKey(tenant.managementKey, id, MERCHANT_PRIVATE_KEY_PKCS8_BASE64)).status).toBe(201);
    expectProblem(await addKey(tenant.managementKey, id, MERCHANT_PRIVATE_KEY_PKCS8_BASE64), 409);
    await call("DELETE", `/google-pay/merchant-registration/${id}`, { key: tenant.managementKey });
  });
});

describe("POST /google-pay", () => {
  it("decrypts a PAN_ONLY token into a card token intent", async () => {
    const reply = await decrypt(serverKey, panOnlyToken());
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.token_intent).toMatchObject({ type: "card", tenant_id: tenant.tenantId });
    expect(reply.body.token_intent.card).toMatchObject({ last4: "1111", expiration_month: 12, expiration_year: 2030, brand: "visa" });
    const read = await call("GET", `/token-intents/${reply.body.token_intent.id}`, { key: serverKey });
    expect(read.status).toBe(200);
    // The card is held encrypted: its number is in no row.
    expect(await dumpDatabase()).not.toContain(PAN_ONLY.pan);
  });

  it("shows a public key only the intent's id, type and times: never the card's facts", async () => {
    const page = (await createApplication(tenant, { type: "public", permissions: ["google-pay:create"] })).key;
    const reply = await decrypt(page, panOnlyToken());
    expect(reply.status, reply.text).toBe(201);
    expect(Object.keys(reply.body.token_intent).sort()).toEqual(["created_at", "created_by", "expires_at", "id", "tenant_id", "type"]);
    expect(reply.text).not.toContain("1111");
  });

  it("names the merchant registration when given, and refuses one that is not the tenant's", async () => {
    expect((await decrypt(serverKey, panOnlyToken(), { merchant_registration_id: merchantId })).status).toBe(201);
    const other = await seedTenant();
    const othersMerchant = await registerMerchant(other.managementKey);
    const before = await rowCounts();
    const problem = expectProblem(await decrypt(serverKey, panOnlyToken(), { merchant_registration_id: othersMerchant }), 400);
    expect(problem.errors?.merchant_registration_id).toBeDefined();
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses a token whose message signature has one byte flipped", async () => {
    const token = panOnlyToken();
    await expectRefused({ ...token, signature: flipByte(token.signature, -3) }, "signature_invalid");
  });

  it("refuses a token whose intermediate key signature has one byte flipped", async () => {
    const token = panOnlyToken();
    const signatures = [flipByte(token.intermediateSigningKey.signatures[0]!, -3)];
    await expectRefused(
      { ...token, intermediateSigningKey: { ...token.intermediateSigningKey, signatures } },
      "intermediate_signature_invalid",
    );
  });

  it("refuses a token whose encryptedMessage or ephemeral key has one byte flipped (the signature no longer covers it)", async () => {
    const token = panOnlyToken();
    await expectRefused(
      withMessageMember(token, "encryptedMessage", (value) => flipByte(value, 3)),
      "signature_invalid",
    );
    await expectRefused(
      withMessageMember(token, "ephemeralPublicKey", (value) => flipByte(value, 20)),
      "signature_invalid",
    );
  });

  it("refuses a token whose intermediate key's expiry was changed (its root signature no longer covers it)", async () => {
    const token = panOnlyToken();
    const signedKey = JSON.parse(token.intermediateSigningKey.signedKey);
    signedKey.keyExpiration = String(Number(signedKey.keyExpiration) + DAY_MS);
    await expectRefused(
      { ...token, intermediateSigningKey: { ...token.intermediateSigningKey, signedKey: JSON.stringify(signedKey) } },
      "intermediate_signature_invalid",
    );
  });

  it("refuses an expired intermediate signing key and an expired message", async () => {
    await expectRefused(panOnlyToken({ keyExpiration: Date.now() - 1000 }), "intermediate_key_expired");
    await expectRefused(sealEcV2(paymentMessage(PAN_ONLY, Date.now() - 1000), { recipientId: RECIPIENT }), "message_expired");
  });

  it("refuses a token signed for another recipient", async () => {
    await expectRefused(panOnlyToken({ recipientId: "merchant:someone-else" }), "signature_invalid");
  });

  it("refuses a token whose intermediate key no Google root key signed", async () => {
    // Signed with the merchant's own key in place of Google's: a key the vault does not trust.
    await expectRefused(panOnlyToken({ rootPrivateKey: MERCHANT_PRIVATE_KEY_PKCS8_BASE64 }), "intermediate_signature_invalid");
  });

  it("refuses a well-signed token encrypted to another merchant key: the tag does not match", async () => {
    const alternatePublic = await rawPublicKeyOf(ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64);
    await expectRefused(
      sealEcV2(paymentMessage(PAN_ONLY), { recipientId: RECIPIENT, recipientPublicKey: alternatePublic }),
      "decryption_failed",
    );
  });

  it("refuses another protocol version, another auth method and a card that is not valid", async () => {
    await expectRefused({ ...panOnlyToken(), protocolVersion: "ECv1" }, "unsupported_protocol_version");
    await expectRefused(
      sealEcV2(paymentMessage({ ...PAN_ONLY, authMethod: "OTHER" }), { recipientId: RECIPIENT }),
      "unsupported_auth_method",
    );
    await expectRefused(sealEcV2(paymentMessage({ ...PAN_ONLY, pan: "4111111111111112" }), { recipientId: RECIPIENT }), "invalid_card");
  });

  it("refuses a malformed token body with a 400, storing nothing", async () => {
    const before = await rowCounts();
    for (const token of [{}, "a string", { ...panOnlyToken(), extra: 1 }, { ...panOnlyToken(), signedMessage: "x".repeat(20_000) }]) {
      expectProblem(await decrypt(serverKey, token), 400);
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses when the tenant has no merchant registration or no key", async () => {
    const other = await seedTenant();
    const key = (await createApplication(other, { type: "private", permissions: ["google-pay:create"] })).key;
    expectProblem(await decrypt(key, panOnlyToken()), 400);
    await registerMerchant(other.managementKey);
    expectProblem(await decrypt(key, panOnlyToken()), 400);
    expect(await storedIntents(other.tenantId)).toBe(0);
  });
});

describe("CRYPTOGRAM_3DS: the google-pay resource", () => {
  let revealer: string;
  let reader: string;
  let deleter: string;

  const threeDsToken = (details: Record<string, unknown> = CRYPTOGRAM_3DS, overrides: Partial<Parameters<typeof sealEcV2>[1]> = {}) =>
    sealEcV2(paymentMessage(details), { recipientId: RECIPIENT, ...overrides });

  async function createResource(members: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const reply = await decrypt(serverKey, threeDsToken(), members);
    expect(reply.status, reply.text).toBe(201);
    return reply.body.google_pay;
  }

  beforeAll(async () => {
    const app = (permissions: string[]) => createApplication(tenant, { type: "private", permissions }).then((created) => created.key);
    revealer = await app(["google-pay:reveal"]);
    reader = await app(["google-pay:read"]);
    deleter = await app(["google-pay:delete"]);
  });

  it("decrypts a CRYPTOGRAM_3DS token into a google-pay resource: the card's facts and the payment's details, never the number or cryptogram", async () => {
    const reply = await decrypt(serverKey, threeDsToken(), { expires_at: "2030-12-25T00:00:00Z" });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.token_intent).toBeUndefined();
    const resource = reply.body.google_pay;
    expect(resource).toMatchObject({
      tenant_id: tenant.tenantId,
      status: "active",
      expires_at: "2030-12-25T00:00:00.000Z",
      card: { last4: "3478", expiration_month: 12, expiration_year: 2030, brand: "visa" },
      details: { tsp: "Google", auth_method: "CRYPTOGRAM_3DS", eci_indicator: "07" },
    });
    expect(resource.details.message_id).toMatch(/^AH2Ejtc/);
    expect(resource.card.bin).toBeUndefined();
    expect(reply.text).not.toContain(CRYPTOGRAM_3DS.pan);
    expect(reply.text).not.toContain(CRYPTOGRAM_3DS.cryptogram);
    // The device card and the cryptogram are held encrypted: neither is in any row.
    const dump = await dumpDatabase();
    expect(dump).not.toContain(CRYPTOGRAM_3DS.pan);
    expect(dump).not.toContain(CRYPTOGRAM_3DS.cryptogram);
  });

  it("GET under google-pay:reveal answers the card whole with its cryptogram and ECI", async () => {
    const { id } = await createResource();
    const read = await call("GET", `/google-pay/${id}`, { key: revealer });
    expect(read.status, read.text).toBe(200);
    expect(read.body).toMatchObject({
      id,
      status: "active",
      // Kept until the end of the card's expiration month (12/2030) when the caller names no expires_at.
      expires_at: "2031-01-01T00:00:00.000Z",
      card: { bin: "48953700", last4: "3478" },
      data: { number: CRYPTOGRAM_3DS.pan, expiration_month: 12, expiration_year: 2030 },
      authentication: { threeds_cryptogram: CRYPTOGRAM_3DS.cryptogram, eci_indicator: "07" },
    });
  });

  it("a device card past its expiration month is refused unless expires_at is sent, storing nothing", async () => {
    const before = await rowCounts();
    const expired = { ...CRYPTOGRAM_3DS, expirationMonth: 1, expirationYear: 2020 };
    const refused = await decrypt(serverKey, threeDsToken(expired));
    expectProblem(refused, 400);
    expect(refused.text).toContain("expiration month has passed");
    expect(await rowCounts()).toEqual(before);
    const kept = await decrypt(serverKey, threeDsToken(expired), { expires_at: "2031-06-01T00:00:00Z" });
    expect(kept.status, kept.text).toBe(201);
    expect(kept.body.google_pay.expires_at).toBe("2031-06-01T00:00:00.000Z");
  });

  it("GET under google-pay:read masks the number to its last four and shows no cryptogram or BIN", async () => {
    const { id } = await createResource();
    const read = await call("GET", `/google-pay/${id}`, { key: reader });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toEqual({ number: "XXXXXXXXXXXX3478", expiration_month: 12, expiration_year: 2030 });
    expect(read.body.authentication).toBeUndefined();
    expect(read.body.card.bin).toBeUndefined();
    expect(read.text).not.toContain(CRYPTOGRAM_3DS.pan);
    expect(read.text).not.toContain(CRYPTOGRAM_3DS.cryptogram);
  });

  it("is used in a proxy call as the docs show, {{ google_pay: <id> | … }}: whole under google-pay:reveal, masked under read, refused otherwise", async () => {
    const { id } = await createResource();
    const charge = {
      token: `{{ google_pay: ${id} | json: "$.data.number" }}`,
      expiry_month: `{{ google_pay: ${id} | json: "$.data" | card_exp: "MM" }}`,
      cryptogram: `{{ google_pay: ${id} | json: "$.authentication.threeds_cryptogram" }}`,
    };
    // The ephemeral proxy itself needs token:use (docs/proxies.md); the resource, google-pay:read or reveal.
    const app = (permissions: string[]) => createApplication(tenant, { type: "private", permissions }).then((created) => created.key);
    const viaProxy = (key: string, body: unknown = charge) =>
      invoke("POST", "", { apiKey: key, body, headers: { "SVC-PROXY-URL": loopback() } });
    const revealed = await viaProxy(await app(["token:use", "google-pay:reveal"]));
    expect(revealed.status, revealed.text).toBe(200);
    expect(JSON.parse(revealed.json.body)).toEqual({
      token: CRYPTOGRAM_3DS.pan,
      expiry_month: "12",
      cryptogram: CRYPTOGRAM_3DS.cryptogram,
    });

    const masked = await viaProxy(await app(["token:use", "google-pay:read"]));
    expect(masked.status, masked.text).toBe(200);
    expect(JSON.parse(masked.json.body)).toMatchObject({ token: "XXXXXXXXXXXX3478", expiry_month: "12" });
    expect(masked.text).not.toContain(CRYPTOGRAM_3DS.pan);
    expect(masked.text).not.toContain(CRYPTOGRAM_3DS.cryptogram);

    expect(expectProxyError(await viaProxy(await app(["token:use"])), 403).detail).toMatch(/google-pay:read/);
    const intruder = await createApplication(await seedTenant(), { type: "private", permissions: ["token:use", "google-pay:reveal"] });
    expect(expectProxyError(await viaProxy(intruder.key), 400).detail).toMatch(/does not exist/);
  });

  it("reads as many resources as one body may name (100) in one statement: each unknown id a 400, never D1's limit of bound parameters", async () => {
    const { id } = await createResource();
    const key = (await createApplication(tenant, { type: "private", permissions: ["token:use", "google-pay:read"] })).key;
    const unknown = Array.from({ length: TOKENS.maxReferences - 1 }, () => crypto.randomUUID());
    const body = Object.fromEntries([id, ...unknown].map((each, i) => [`card${i}`, `{{ google_pay: ${each} }}`]));
    const reply = await invoke("POST", "", { apiKey: key, body, headers: { "SVC-PROXY-URL": loopback() } });
    expect(expectProxyError(reply, 400).detail).toBe(`Google Pay resource ${unknown[0]} does not exist or has expired`);
  });

  it("is checked again when a react that used it is replayed: a 409 once the caller lost google-pay:reveal or both read permissions, or it is gone", async () => {
    const { id } = await createResource();
    const reactor = await createCodeReactor(tenant, "module.exports = async (req) => ({ raw: req.args });");
    const caller = await createApplication(tenant, {
      type: "private",
      name: "charging backend",
      permissions: ["token:use", "google-pay:reveal"],
    });
    const permit = async (permissions: string[]) => {
      const body = { name: "charging backend", permissions };
      expect((await call("PUT", `/applications/${caller.id}`, { key: tenant.managementKey, body })).status).toBe(200);
    };
    const args = { card: `{{ google_pay: ${id} | json: "$.data.number" }}` };
    const replay = () => react(caller.key, reactor.id, args, { "SVC-IDEMPOTENCY-KEY": "charge-once" });
    const first = await replay();
    expect(first.status, first.text).toBe(200);
    expect(first.text).toContain(CRYPTOGRAM_3DS.pan);
    expect((await replay()).headers.get("SVC-Idempotent-Replayed")).toBe("true");

    await permit(["token:use", "google-pay:read"]);
    const masked = await replay();
    expect(expectProblem(masked, 409).detail).toMatch(new RegExp(`Google Pay resource ${id} is now shown masked`));
    expect(masked.text).not.toContain(CRYPTOGRAM_3DS.pan);
    await permit(["token:use"]);
    expect(expectProblem(await replay(), 409).detail).toMatch(
      new RegExp(`Using Google Pay resource ${id} needs google-pay:read or google-pay:reveal`),
    );
    await permit(["token:use", "google-pay:reveal"]);
    expect((await replay()).status).toBe(200);
    expect((await call("DELETE", `/google-pay/${id}`, { key: deleter })).status).toBe(200);
    expect(expectProblem(await replay(), 409).detail).toMatch(new RegExp(`Google Pay resource ${id} does not exist or has expired`));
  });

  it("GET needs google-pay:read or reveal, DELETE google-pay:delete; google-pay:create reads nothing", async () => {
    const { id } = await createResource();
    expect(expectProblem(await call("GET", `/google-pay/${id}`, { key: serverKey }), 403).detail).toMatch(
      /google-pay:reveal or google-pay:read/,
    );
    expect(expectProblem(await call("DELETE", `/google-pay/${id}`, { key: revealer }), 403).detail).toMatch(/google-pay:delete/);
    for (const permissions of [["google-pay:read"], ["google-pay:reveal"], ["google-pay:delete"]]) {
      const refused = await call("POST", "/applications", {
        key: tenant.managementKey,
        body: { name: "page", type: "public", permissions },
      });
      expectProblem(refused, 400);
    }
  });

  it("DELETE answers the deleted resource's id as a JSON string; it is gone after, sealed card and cryptogram with it", async () => {
    const { id } = await createResource({ expires_at: "2031-01-01T00:00:00Z" });
    const deleted = await call("DELETE", `/google-pay/${id}`, { key: deleter });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toBe(id);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM google_pay_resources WHERE id = ?").bind(id).first("n")).toBe(0);
    expect((await call("GET", `/google-pay/${id}`, { key: revealer })).status).toBe(404);
    expect((await call("DELETE", `/google-pay/${id}`, { key: deleter })).status).toBe(404);
  });

  it("another tenant's resource is unknown to every route (404)", async () => {
    const { id } = await createResource();
    const other = await seedTenant();
    const otherKey = (await createApplication(other, { type: "private", permissions: ["google-pay:reveal", "google-pay:delete"] })).key;
    expect((await call("GET", `/google-pay/${id}`, { key: otherKey })).status).toBe(404);
    expect((await call("DELETE", `/google-pay/${id}`, { key: otherKey })).status).toBe(404);
    expect((await call("GET", `/google-pay/${id}`, { key: revealer })).status).toBe(200);
  });

  it("the cryptogram is kept CARD_CVC_RETENTION_S: past it no read shows it, and the cron clears its ciphertext", async () => {
    const { id } = await createResource();
    await runCron(Date.now() + 3_600_000 + 60_000);
    const read = await call("GET", `/google-pay/${id}`, { key: revealer });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.number).toBe(CRYPTOGRAM_3DS.pan);
    expect(read.body.authentication).toBeUndefined();
    const row = await env.DB.prepare("SELECT authentication_ciphertext, authentication_expires_at FROM google_pay_resources WHERE id = ?")
      .bind(id)
      .first();
    expect(row).toEqual({ authentication_ciphertext: null, authentication_expires_at: null });
  });

  it("a resource past its expires_at is unknown, and the cron deletes it", async () => {
    const { id } = await createResource({ expires_at: new Date(Date.now() + 60_000).toISOString() });
    await runCron(Date.now() + 120_000);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM google_pay_resources WHERE id = ?").bind(id).first("n")).toBe(0);
    expect((await call("GET", `/google-pay/${id}`, { key: revealer })).status).toBe(404);
  });

  it("the audit log names the google-pay resource a token became, and each read and delete of it", async () => {
    const { id } = await createResource();
    await call("GET", `/google-pay/${id}`, { key: reader });
    await call("DELETE", `/google-pay/${id}`, { key: deleter });
    for (const operation of ["create", "read", "delete"]) {
      const entry = await entryWhere(
        tenant,
        { entity_type: "google-pay" },
        (candidate) => candidate.entity_id === id && candidate.operation === operation,
      );
      expect(entry, operation).toBeDefined();
    }
  });

  it("a public key is answered only the resource's identity", async () => {
    const page = (await createApplication(tenant, { type: "public", permissions: ["google-pay:create"] })).key;
    const reply = await decrypt(page, threeDsToken());
    expect(reply.status, reply.text).toBe(201);
    expect(Object.keys(reply.body.google_pay).sort()).toEqual(["created_at", "created_by", "expires_at", "id", "status", "tenant_id"]);
  });

  it("refuses a CRYPTOGRAM_3DS token without a cryptogram, storing nothing", async () => {
    const { cryptogram: _cryptogram, ...withoutCryptogram } = CRYPTOGRAM_3DS;
    await expectRefused(threeDsToken(withoutCryptogram), "invalid_cryptogram");
  });

  it("refuses an over-long cryptogram and an ECI that is not one or two digits, storing nothing", async () => {
    await expectRefused(threeDsToken({ ...CRYPTOGRAM_3DS, cryptogram: "x".repeat(300) }), "invalid_cryptogram");
    await expectRefused(threeDsToken({ ...CRYPTOGRAM_3DS, eciIndicator: "<script>" }), "invalid_cryptogram");
  });

  it("refuses a CRYPTOGRAM_3DS device card that is not a valid card, storing nothing", async () => {
    await expectRefused(threeDsToken({ ...CRYPTOGRAM_3DS, pan: "4895370012003479" }), "invalid_card");
  });

  it("refuses an expires_at in the past, storing nothing", async () => {
    const before = await rowCounts();
    const problem = expectProblem(await decrypt(serverKey, threeDsToken(), { expires_at: "2020-01-01T00:00:00Z" }), 400);
    expect(problem.errors?.expires_at).toBeDefined();
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses a CRYPTOGRAM_3DS token with a flipped signature byte, storing nothing", async () => {
    const token = threeDsToken();
    await expectRefused({ ...token, signature: flipByte(token.signature, -3) }, "signature_invalid");
  });

  it("refuses an expired CRYPTOGRAM_3DS message and one signed for another recipient, storing nothing", async () => {
    await expectRefused(sealEcV2(paymentMessage(CRYPTOGRAM_3DS, Date.now() - 1000), { recipientId: RECIPIENT }), "message_expired");
    await expectRefused(threeDsToken(CRYPTOGRAM_3DS, { recipientId: "merchant:someone-else" }), "signature_invalid");
  });
});
