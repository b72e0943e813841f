import { beforeAll, describe, expect, it } from "vitest";
import { CRYPTOGRAM_3DS, flipByte, PAN_ONLY, paymentMessage, type SealedToken, sealEcV2 } from "../support/google-pay";
import { call, createApplication, dumpDatabase, expectProblem, rowCounts, seedTenant, type Tenant } from "../support/harness";
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

  it("refuses another protocol version, a CRYPTOGRAM_3DS token (not supported yet) and a card that is not valid", async () => {
    await expectRefused({ ...panOnlyToken(), protocolVersion: "ECv1" }, "unsupported_protocol_version");
    await expectRefused(sealEcV2(paymentMessage(CRYPTOGRAM_3DS), { recipientId: RECIPIENT }), "unsupported_auth_method");
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
