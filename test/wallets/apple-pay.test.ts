import { env } from "cloudflare:test";
import * as pkijs from "pkijs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { APPLE_ROOT_CA_G3 } from "../../src/apple-pay/apple-root";
import { signingClock } from "../../src/apple-pay/ec-v1";
import { processingKeyContext } from "../../src/apple-pay/service";
import { authenticationContext, cardContext } from "../../src/apple-pay/tokens";
import { APPLE_PAY, TOKENS } from "../../src/limits";
import { callConfigured } from "../support/configured";
import { keysOfTenant } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication, dumpDatabase, expectProblem, rowCounts, seedTenant, type Tenant } from "../support/harness";
import { expectProxyError, invoke, loopback } from "../support/proxies";
import { createCodeReactor, react } from "../support/reactors";
import {
  GALA_CERTIFICATE_PEM,
  GALA_LEGACY_PKCS12_BASE64,
  GALA_PKCS12_BASE64,
  GALA_PRIVATE_KEY_PEM,
  GALA_SIGNED_AT,
  GALA_SLOW_PKCS12_BASE64,
  GALA_TOKEN,
} from "./apple-pay-vector";
import { withExtraParts, withKeyCopies, withKeyIterations, withPartIterations, withPartKdf } from "./pkcs12-files";

/** scrypt's OID (RFC 7914), a key derivation PBES2 may name and the vault does not run. */
const SCRYPT = "1.3.6.1.4.1.11591.4.11";

/*
 * Apple Pay over HTTP. The published token (apple-pay-vector.ts) was signed in 2021, and the vault
 * accepts a signature at most 5 minutes old: the tests that decrypt it move the clock the window is
 * read against (signingClock, in this isolate, which is the vault's) near the signing time. Nothing
 * else sees the moved clock, and production has no such knob (docs/decisions.md, "Apple Pay").
 */

const base64 = (text: string) => btoa(text);
const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const b64Of = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const hexOf = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

/** The base64 text with one byte of what it encodes flipped. */
function flipped(b64: string, at: number): string {
  const bytes = bytesOf(b64);
  bytes[at]! ^= 0x01;
  return b64Of(bytes);
}

/** Gala's card expired in September 2024: the tests keep it until a time to come. */
const EXPIRES_AT = "2099-01-01T00:00:00.000Z";
const DPAN = "5353756319181169";
const CRYPTOGRAM = "AMwBRjPWDnAgAA7Rls7mAoABFA==";

function tokenWith(paymentData: object = GALA_TOKEN) {
  return {
    apple_payment_data: { paymentData, transactionIdentifier: GALA_TOKEN.header.transactionId.toUpperCase() },
    expires_at: EXPIRES_AT,
  };
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs `request` with the signing-time window read `offsetMs` after the token's signing time. */
async function signedAgo<T>(offsetMs: number, request: () => Promise<T>): Promise<T> {
  const clock = vi.spyOn(signingClock, "now").mockReturnValue(GALA_SIGNED_AT + offsetMs);
  try {
    return await request();
  } finally {
    clock.mockRestore();
  }
}

async function registerMerchant(tenant: Tenant, body: object = { merchant_identifier: "merchant.test.spreedly.123merchant" }) {
  const reply = await call("POST", "/apple-pay/merchant-registration", { key: tenant.managementKey, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

async function registerCertificates(tenant: Tenant, merchantId: string, data = GALA_PKCS12_BASE64, password = "s3cret") {
  return call("POST", `/apple-pay/merchant-registration/${merchantId}/certificates`, {
    key: tenant.managementKey,
    body: { payment_processor_certificate_data: data, payment_processor_certificate_password: password, domain: "shop.example.com" },
  });
}

/** A tenant with gala's merchant registered, and a private key that may decrypt and sees cards revealed. */
async function merchantTenant() {
  const tenant = await seedTenant();
  const merchant = await registerMerchant(tenant);
  const certificates = await registerCertificates(tenant, merchant.id);
  expect(certificates.status, JSON.stringify(certificates.body)).toBe(201);
  const server = await createApplication(tenant, {
    type: "private",
    permissions: ["apple-pay:create", "apple-pay:read", "apple-pay:reveal", "apple-pay:delete"],
  });
  return { tenant, merchant, certificates: certificates.body, server };
}

describe("Apple Pay merchant configuration", () => {
  it("embeds Apple Root CA - G3: its SHA-256 fingerprint is the one Apple publishes", async () => {
    expect(hexOf(await crypto.subtle.digest("SHA-256", APPLE_ROOT_CA_G3 as Uint8Array<ArrayBuffer>)).toUpperCase()).toBe(
      "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179",
    );
  });

  it("registers a merchant and a PKCS #12 certificate, answering the certificate's facts and never its key", async () => {
    const tenant = await seedTenant();
    const merchant = await registerMerchant(tenant);
    expect(merchant).toMatchObject({ tenant_id: tenant.tenantId, merchant_identifier: "merchant.test.spreedly.123merchant" });
    expect((await call("GET", `/apple-pay/merchant-registration/${merchant.id}`, { key: tenant.managementKey })).body).toEqual(merchant);

    const created = await registerCertificates(tenant, merchant.id);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      tenant_id: tenant.tenantId,
      merchant_registration_id: merchant.id,
      domain: "shop.example.com",
      payment_processor_certificate_expiration_date: "2023-09-30T14:15:08.000Z",
      payment_processor_certificate_fingerprint: "57b44f751d2acdd7fe81e498fec1ccd6769d55391793c072594bed196f4dad84",
      created_by: tenant.managementApplicationId,
      created_at: expect.any(String),
    });
    const read = await call("GET", `/apple-pay/merchant-registration/${merchant.id}/certificates/${created.body.id}`, {
      key: tenant.managementKey,
    });
    expect(read.body).toEqual(created.body);
  });

  it("keeps the private key only sealed under the tenant's data key, under the certificate's own context", async () => {
    const { tenant, certificates } = await merchantTenant();
    const row = await env.DB.prepare("SELECT * FROM apple_pay_certificates WHERE id = ?")
      .bind(certificates.id)
      .first<Record<string, string>>();
    expect(row!.private_key_ciphertext).toMatch(/^v\d+\./);
    const keys = await keysOfTenant(tenant.tenantId);
    const pkcs8 = await keys.decrypt(row!.private_key_ciphertext!, processingKeyContext(certificates.id));
    expect(pkcs8).toBe(GALA_PRIVATE_KEY_PEM.replace(/-----[^-]+-----|\s/g, ""));
    await expect(keys.decrypt(row!.private_key_ciphertext!, processingKeyContext(crypto.randomUUID()))).rejects.toThrow();
    expect(await dumpDatabase()).not.toContain(pkcs8);
  });

  it("takes PEM text with the certificate and a PKCS #8 key", async () => {
    const tenant = await seedTenant();
    const merchant = await registerMerchant(tenant);
    const reply = await registerCertificates(tenant, merchant.id, base64(GALA_CERTIFICATE_PEM + GALA_PRIVATE_KEY_PEM), "");
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  });

  it("refuses, with a 400 and nothing stored, credentials it cannot use", async () => {
    const tenant = await seedTenant();
    const merchant = await registerMerchant(tenant);
    const stranger = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
    const strangerPem = `-----BEGIN PRIVATE KEY-----\n${b64Of(new Uint8Array((await crypto.subtle.exportKey("pkcs8", stranger.privateKey)) as ArrayBuffer))}\n-----END PRIVATE KEY-----\n`;
    const rootPem = `-----BEGIN CERTIFICATE-----\n${b64Of(APPLE_ROOT_CA_G3)}\n-----END CERTIFICATE-----\n`;
    const before = await rowCounts();
    const cases: [string, string, RegExp][] = [
      [GALA_PKCS12_BASE64, "wrong", /does not open with this password/],
      [GALA_LEGACY_PKCS12_BASE64, "s3cret", /legacy or unknown cipher/],
      [GALA_SLOW_PKCS12_BASE64, "s3cret", /more than 100000 iterations/],
      [base64(GALA_CERTIFICATE_PEM + strangerPem), "", /not the certificate's/],
      [base64(rootPem + strangerPem), "", /merchant id extension/],
      [base64(GALA_CERTIFICATE_PEM), "", /no PRIVATE KEY/],
      [base64("not a certificate"), "", /neither PEM text nor a PKCS #12 file/],
    ];
    for (const [data, password, message] of cases) {
      const problem = expectProblem(await registerCertificates(tenant, merchant.id, data, password), 400);
      expect(problem.errors?.payment_processor_certificate_data?.[0]).toMatch(message);
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("counts a PKCS #12 file's parts, bags and every PBKDF2 count before it derives a key: beyond the limits, or another derivation than PBKDF2, a 400 and nothing stored", async () => {
    const tenant = await seedTenant();
    const merchant = await registerMerchant(tenant);
    const { maxPkcs12Iterations, maxPkcs12Parts, maxPkcs12Bags } = APPLE_PAY;
    const within = await registerCertificates(tenant, merchant.id, await withExtraParts(maxPkcs12Parts - 2, 2048));
    expect(within.status, JSON.stringify(within.body)).toBe(201);
    const before = await rowCounts();
    const cases: [string, RegExp][] = [
      [await withPartIterations(100 * maxPkcs12Iterations), new RegExp(`more than ${maxPkcs12Iterations} iterations`)],
      [await withKeyIterations(100 * maxPkcs12Iterations), new RegExp(`more than ${maxPkcs12Iterations} iterations`)],
      [await withPartIterations(2 ** 32), new RegExp(`more than ${maxPkcs12Iterations} iterations`)],
      [await withExtraParts(maxPkcs12Parts - 1, maxPkcs12Iterations), new RegExp(`more than ${maxPkcs12Parts} parts`)],
      [await withKeyCopies(maxPkcs12Bags + 1), new RegExp(`more than ${maxPkcs12Bags} bags`)],
      [await withPartKdf(SCRYPT), /legacy or unknown cipher/],
    ];
    for (const [data, message] of cases) {
      const problem = expectProblem(await registerCertificates(tenant, merchant.id, data), 400);
      expect(problem.errors?.payment_processor_certificate_data?.[0]).toMatch(message);
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("re-seals the processing key and the Apple Pay tokens under the new version when the tenant's keys rotate, and still decrypts with it", async () => {
    const { tenant, certificates, server } = await merchantTenant();
    const kept = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith() }));
    expect(kept.status, JSON.stringify(kept.body)).toBe(201);
    const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };
    const started = await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    let status = started.body;
    while (status.state !== "done") {
      expect(status.last_error).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator })).body;
    }
    const row = await env.DB.prepare("SELECT private_key_ciphertext FROM apple_pay_certificates WHERE id = ?")
      .bind(certificates.id)
      .first<{ private_key_ciphertext: string }>();
    expect(row!.private_key_ciphertext).toMatch(/^v2\./);
    expect((await keysOfTenant(tenant.tenantId)).heldVersions).toEqual([2]);
    const token = await env.DB.prepare("SELECT data_ciphertext, authentication_ciphertext FROM apple_pay_tokens WHERE id = ?")
      .bind(kept.body.apple_pay.id)
      .first<{ data_ciphertext: string; authentication_ciphertext: string }>();
    expect(token!.data_ciphertext).toMatch(/^v2\./);
    expect(token!.authentication_ciphertext).toMatch(/^v2\./);
    const revealed = await call("GET", `/apple-pay/${kept.body.apple_pay.id}`, { key: server.key });
    expect(revealed.body.authentication).toEqual({ threeds_cryptogram: CRYPTOGRAM });
    const decrypted = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith() }));
    expect(decrypted.status, JSON.stringify(decrypted.body)).toBe(201);
  }, 30_000);

  it("deletes a certificate, and a merchant with its certificates: 204, then 404", async () => {
    const { tenant, merchant, certificates } = await merchantTenant();
    const path = `/apple-pay/merchant-registration/${merchant.id}/certificates/${certificates.id}`;
    expect((await call("DELETE", path, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await call("GET", path, { key: tenant.managementKey }), 404);
    const again = await registerCertificates(tenant, merchant.id);
    expect((await call("DELETE", `/apple-pay/merchant-registration/${merchant.id}`, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await call("GET", `/apple-pay/merchant-registration/${merchant.id}`, { key: tenant.managementKey }), 404);
    const row = await env.DB.prepare("SELECT id FROM apple_pay_certificates WHERE id = ?").bind(again.body.id).first();
    expect(row).toBeNull();
    expectProblem(await registerCertificates(tenant, merchant.id), 404);
  });

  it("answers 404 to another tenant's merchant and certificates, and leaves them in place", async () => {
    const { tenant, merchant, certificates } = await merchantTenant();
    const intruder = await seedTenant();
    const certificatePath = `/apple-pay/merchant-registration/${merchant.id}/certificates/${certificates.id}`;
    expectProblem(await call("GET", `/apple-pay/merchant-registration/${merchant.id}`, { key: intruder.managementKey }), 404);
    expectProblem(await call("DELETE", `/apple-pay/merchant-registration/${merchant.id}`, { key: intruder.managementKey }), 404);
    expectProblem(await call("GET", certificatePath, { key: intruder.managementKey }), 404);
    expectProblem(await call("DELETE", certificatePath, { key: intruder.managementKey }), 404);
    expectProblem(await registerCertificates(intruder, merchant.id), 404);
    expect((await call("GET", certificatePath, { key: tenant.managementKey })).status).toBe(200);
  });

  it("needs apple-pay:manage, which only management applications hold", async () => {
    const tenant = await seedTenant();
    const other = await createApplication(tenant, { type: "management", permissions: ["keys:read"] });
    const refused = await call("POST", "/apple-pay/merchant-registration", { key: other.key, body: {} });
    expect(expectProblem(refused, 403).detail).toMatch(/apple-pay:manage/);
    const privateApp = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "server", type: "private", permissions: ["apple-pay:manage"] },
    });
    expectProblem(privateApp, 400);
  });

  it("holds a tenant to 20 merchants and a merchant to 5 certificates (409 beyond)", async () => {
    const tenant = await seedTenant();
    const merchants = [];
    for (let i = 0; i < 20; i++) merchants.push(await registerMerchant(tenant, {}));
    expect(merchants[0].merchant_identifier).toBe(tenant.tenantId);
    expectProblem(await call("POST", "/apple-pay/merchant-registration", { key: tenant.managementKey, body: {} }), 409);
    for (let i = 0; i < 5; i++) expect((await registerCertificates(tenant, merchants[0].id)).status).toBe(201);
    expectProblem(await registerCertificates(tenant, merchants[0].id), 409);
  }, 30_000);
});

/** The stored row of an Apple Pay token. */
async function storedToken(id: string) {
  return env.DB.prepare("SELECT * FROM apple_pay_tokens WHERE id = ?").bind(id).first<Record<string, string | number | null>>();
}

describe("POST /apple-pay: an EC_v1 token decrypted into an Apple Pay token", () => {
  it("decrypts gala's published token to the plaintext its source states, the card and cryptogram kept only sealed", async () => {
    const { tenant, server } = await merchantTenant();
    const reply = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith() }));
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body.apple_pay).toEqual({
      id: expect.any(String),
      type: "dpan",
      tenant_id: tenant.tenantId,
      status: "active",
      expires_at: EXPIRES_AT,
      created_by: server.id,
      created_at: expect.any(String),
      transaction_id: GALA_TOKEN.header.transactionId,
      payment_data_type: "3DSecure",
      device_manufacturer_identifier: "050110030273",
      card: { bin: "53537563", last4: "1169", expiration_month: 9, expiration_year: 2024, brand: "mastercard" },
    });
    expect(reply.text).not.toContain(DPAN);
    expect(reply.text).not.toContain(CRYPTOGRAM);

    const id = reply.body.apple_pay.id;
    const row = await storedToken(id);
    const keys = await keysOfTenant(tenant.tenantId);
    expect(JSON.parse(await keys.decrypt(row!.data_ciphertext as string, cardContext(id)))).toEqual({
      number: DPAN,
      expiration_month: 9,
      expiration_year: 2024,
    });
    expect(JSON.parse(await keys.decrypt(row!.authentication_ciphertext as string, authenticationContext(id)))).toEqual({
      threeds_cryptogram: CRYPTOGRAM,
    });
    // Neither ciphertext opens as the other, nor as another row's.
    await expect(keys.decrypt(row!.authentication_ciphertext as string, cardContext(id))).rejects.toThrow();
    await expect(keys.decrypt(row!.data_ciphertext as string, cardContext(crypto.randomUUID()))).rejects.toThrow();
    const dump = await dumpDatabase();
    expect(dump).not.toContain(DPAN);
    expect(dump).not.toContain(CRYPTOGRAM);
  });

  it("keeps the token until the end of the card's expiration month when no expires_at is sent, and refuses a card already expired then", async () => {
    const { server } = await merchantTenant();
    const before = await rowCounts();
    const { expires_at: _, ...withoutExpiry } = tokenWith();
    const refused = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: server.key, body: withoutExpiry }));
    expect(expectProblem(refused, 400).errors?.["apple_payment_data.paymentData"]?.[0]).toMatch(/expiration month has passed/);
    const past = await signedAgo(60_000, () =>
      call("POST", "/apple-pay", { key: server.key, body: { ...withoutExpiry, expires_at: "2020-01-01T00:00:00Z" } }),
    );
    expect(expectProblem(past, 400).errors?.expires_at).toEqual(["must be in the future"]);
    expect(await rowCounts()).toEqual(before);
  });

  it("shows a public key no card facts", async () => {
    const { tenant } = await merchantTenant();
    const browser = await createApplication(tenant, { type: "public", permissions: ["apple-pay:create"] });
    const reply = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: browser.key, body: tokenWith() }));
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body.apple_pay.card).toBeUndefined();
  });

  it("shows a private key without apple-pay:reveal the card's last four, expiry and brand, never its BIN", async () => {
    const { tenant } = await merchantTenant();
    const creator = await createApplication(tenant, { type: "private", permissions: ["apple-pay:create"] });
    const reply = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: creator.key, body: tokenWith() }));
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body.apple_pay.card).toEqual({ last4: "1169", expiration_month: 9, expiration_year: 2024, brand: "mastercard" });
    expect(reply.body.apple_pay.data).toBeUndefined();
  });

  /** The token's signing-time attribute, `210901190306Z`, one second later: the signed attributes no longer match their signature. */
  function withSigningTimeMoved(): string {
    const der = bytesOf(GALA_TOKEN.signature);
    const text = new TextDecoder("latin1").decode(der);
    const at = text.indexOf("210901190306Z");
    expect(at).toBeGreaterThan(0);
    der[at + 11] = "7".charCodeAt(0);
    return b64Of(der);
  }

  it("refuses, with a 400 and nothing stored, one flipped byte of the signature, the ciphertext, the ephemeral key or the signing time", async () => {
    const { server } = await merchantTenant();
    const signature = bytesOf(GALA_TOKEN.signature);
    const tampered = {
      signature: { ...GALA_TOKEN, signature: flipped(GALA_TOKEN.signature, signature.length - 20) },
      ciphertext: { ...GALA_TOKEN, data: flipped(GALA_TOKEN.data, 10) },
      tag: { ...GALA_TOKEN, data: flipped(GALA_TOKEN.data, bytesOf(GALA_TOKEN.data).length - 1) },
      ephemeralKey: {
        ...GALA_TOKEN,
        header: { ...GALA_TOKEN.header, ephemeralPublicKey: flipped(GALA_TOKEN.header.ephemeralPublicKey, 40) },
      },
      transactionId: { ...GALA_TOKEN, header: { ...GALA_TOKEN.header, transactionId: `00${GALA_TOKEN.header.transactionId.slice(2)}` } },
      signingTime: { ...GALA_TOKEN, signature: withSigningTimeMoved() },
    };
    const before = await rowCounts();
    for (const [what, paymentData] of Object.entries(tampered)) {
      const reply = await signedAgo(60_000, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith(paymentData) }));
      const problem = expectProblem(reply, 400);
      expect(problem.errors?.["apple_payment_data.paymentData"]?.[0], what).toMatch(/signature/);
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses a token signed more than 5 minutes ago or more than a minute ahead, and takes one within", async () => {
    const { server } = await merchantTenant();
    const before = await rowCounts();
    for (const offset of [5 * 60_000 + 1_000, -61_000]) {
      const reply = await signedAgo(offset, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith() }));
      expect(expectProblem(reply, 400).errors?.["apple_payment_data.paymentData"]).toEqual([
        "signature's signing time is outside the accepted window",
      ]);
    }
    // Today, the published token is years old.
    expectProblem(await call("POST", "/apple-pay", { key: server.key, body: tokenWith() }), 400);
    expect(await rowCounts()).toEqual(before);
    const within = await signedAgo(5 * 60_000 - 1_000, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith() }));
    expect(within.status).toBe(201);
  });

  it("decrypts only with the caller's tenant's certificates, of the merchant named when one is", async () => {
    const owner = await merchantTenant();
    const intruder = await seedTenant();
    const intruderServer = await createApplication(intruder, { type: "private", permissions: ["apple-pay:create"] });
    const otherMerchant = await registerMerchant(owner.tenant);
    const before = await rowCounts();
    const attempts = [
      () => call("POST", "/apple-pay", { key: intruderServer.key, body: tokenWith() }),
      () =>
        call("POST", "/apple-pay", {
          key: intruderServer.key,
          body: { ...tokenWith(), merchant_registration_id: owner.merchant.id },
        }),
      () => call("POST", "/apple-pay", { key: owner.server.key, body: { ...tokenWith(), merchant_registration_id: otherMerchant.id } }),
    ];
    for (const attempt of attempts) {
      const problem = expectProblem(await signedAgo(60_000, attempt), 400);
      expect(problem.errors?.["apple_payment_data.paymentData.header.publicKeyHash"]?.[0]).toMatch(
        /names no payment processing certificate/,
      );
    }
    expect(await rowCounts()).toEqual(before);
    const named = await signedAgo(60_000, () =>
      call("POST", "/apple-pay", { key: owner.server.key, body: { ...tokenWith(), merchant_registration_id: owner.merchant.id } }),
    );
    expect(named.status).toBe(201);
  });

  it("no longer decrypts once the certificate is deleted", async () => {
    const { tenant, merchant, certificates, server } = await merchantTenant();
    const path = `/apple-pay/merchant-registration/${merchant.id}/certificates/${certificates.id}`;
    expect((await call("DELETE", path, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await signedAgo(60_000, () => call("POST", "/apple-pay", { key: server.key, body: tokenWith() })), 400);
  });

  it("needs apple-pay:create, which public and private applications may hold", async () => {
    const { tenant } = await merchantTenant();
    const without = await createApplication(tenant, { type: "private", permissions: ["token-intent:create"] });
    const refused = await call("POST", "/apple-pay", { key: without.key, body: tokenWith() });
    expect(expectProblem(refused, 403).detail).toMatch(/apple-pay:create/);
    expectProblem(await call("POST", "/apple-pay", { key: tenant.managementKey, body: tokenWith() }), 403);
  });

  it("refuses a signature carrying more certificates than Apple's chain before building any chain", async () => {
    const { server } = await merchantTenant();
    const info = pkijs.ContentInfo.fromBER(bytesOf(GALA_TOKEN.signature));
    const signedData = new pkijs.SignedData({ schema: info.content });
    const [leaf] = signedData.certificates!;
    signedData.certificates!.push(leaf!, leaf!);
    const stuffed = new pkijs.ContentInfo({ contentType: info.contentType, content: signedData.toSchema(true) });
    const signature = b64Of(new Uint8Array(stuffed.toSchema().toBER(false)));
    const before = await rowCounts();
    const reply = await signedAgo(60_000, () =>
      call("POST", "/apple-pay", { key: server.key, body: tokenWith({ ...GALA_TOKEN, signature }) }),
    );
    expect(expectProblem(reply, 400).errors?.["apple_payment_data.paymentData"]).toEqual(["signature carries more than 3 certificates"]);
    expect(await rowCounts()).toEqual(before);
  });

  it("refuses RSA_v1 tokens and malformed fields with a 400", async () => {
    const { server } = await merchantTenant();
    const cases = [
      { ...GALA_TOKEN, version: "RSA_v1" },
      { ...GALA_TOKEN, data: "not base64!" },
      { ...GALA_TOKEN, header: { ...GALA_TOKEN.header, transactionId: "xyz" } },
      { ...GALA_TOKEN, signature: btoa("not DER") },
    ];
    for (const paymentData of cases)
      expectProblem(await call("POST", "/apple-pay", { key: server.key, body: tokenWith(paymentData) }), 400);
  });
});

describe("GET and DELETE /apple-pay/{id}: the Apple Pay token", () => {
  async function createdToken(key: string, configuration?: Record<string, string>) {
    const reply = await signedAgo(60_000, () =>
      configuration
        ? callConfigured(configuration, "POST", "/apple-pay", { headers: { "SVC-API-KEY": key }, body: tokenWith() })
        : call("POST", "/apple-pay", { key, body: tokenWith() }),
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    return reply.body.apple_pay as { id: string };
  }

  it("shows apple-pay:read the card masked to its last four, and apple-pay:reveal the card and cryptogram", async () => {
    const { tenant, server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:use", "apple-pay:read"] });
    const masked = await call("GET", `/apple-pay/${id}`, { key: reader.key });
    expect(masked.status, JSON.stringify(masked.body)).toBe(200);
    expect(masked.body).toMatchObject({
      id,
      type: "dpan",
      status: "active",
      card: { last4: "1169", expiration_month: 9, expiration_year: 2024, brand: "mastercard" },
      data: { number: "XXXXXXXXXXXX1169", expiration_month: 9, expiration_year: 2024 },
    });
    expect(masked.body.card.bin).toBeUndefined();
    expect(masked.body.authentication).toBeUndefined();
    expect(masked.text).not.toContain(DPAN);
    expect(masked.text).not.toContain(CRYPTOGRAM);

    const revealed = await call("GET", `/apple-pay/${id}`, { key: server.key });
    expect(revealed.body).toMatchObject({
      card: { bin: "53537563", last4: "1169" },
      data: { number: DPAN, expiration_month: 9, expiration_year: 2024 },
      authentication: { threeds_cryptogram: CRYPTOGRAM },
    });
  });

  it("is used in a proxy call as the docs show, {{ apple_pay: <id> | … }}: whole under apple-pay:reveal, masked under read, refused otherwise", async () => {
    const { tenant, server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    const charge = {
      token: `{{ apple_pay: ${id} | json: '$.data.number' }}`,
      expiry_month: `{{ apple_pay: ${id} | json: '$.data' | card_exp: 'MM' }}`,
      expiry_year: `{{ apple_pay: ${id} | json: '$.data' | card_exp: 'YYYY' }}`,
      cryptogram: `{{ apple_pay: ${id} | json: '$.authentication.threeds_cryptogram' }}`,
    };
    const viaProxy = (key: string, body: unknown = charge) =>
      invoke("POST", "", { apiKey: key, body, headers: { "SVC-PROXY-URL": loopback() } });
    // The ephemeral proxy itself needs token:use (docs/proxies.md); the token, apple-pay:read.
    const server2 = await createApplication(tenant, { type: "private", permissions: ["token:use", "apple-pay:read", "apple-pay:reveal"] });
    const revealed = await viaProxy(server2.key);
    expect(revealed.status, revealed.text).toBe(200);
    expect(JSON.parse(revealed.json.body)).toEqual({ token: DPAN, expiry_month: "09", expiry_year: "2024", cryptogram: CRYPTOGRAM });

    const reader = await createApplication(tenant, { type: "private", permissions: ["token:use", "apple-pay:read"] });
    const masked = await viaProxy(reader.key);
    expect(masked.status, masked.text).toBe(200);
    expect(JSON.parse(masked.json.body)).toMatchObject({ token: "XXXXXXXXXXXX1169", expiry_month: "09" });
    expect(masked.text).not.toContain(DPAN);
    expect(masked.text).not.toContain(CRYPTOGRAM);

    const other = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    expect(expectProxyError(await viaProxy(other.key), 403).detail).toMatch(/apple-pay:read/);
    const intruder = await createApplication(await seedTenant(), {
      type: "private",
      permissions: ["token:use", "apple-pay:read", "apple-pay:reveal"],
    });
    expect(expectProxyError(await viaProxy(intruder.key), 400).detail).toMatch(/does not exist/);
    expect(expectProxyError(await viaProxy(server2.key, { token: "{{ apple_pay: not-a-uuid }}" }), 400).detail).toMatch(/expression/);
  });

  it("reads as many Apple Pay tokens as one body may name (100) in one statement: each unknown id a 400, never D1's limit of bound parameters", async () => {
    const { tenant } = await merchantTenant();
    const server = await createApplication(tenant, { type: "private", permissions: ["token:use", "apple-pay:read"] });
    const body = Object.fromEntries(
      Array.from({ length: TOKENS.maxReferences }, (_, i) => [`card${i}`, `{{ apple_pay: ${crypto.randomUUID()} }}`]),
    );
    const reply = await invoke("POST", "", { apiKey: server.key, body, headers: { "SVC-PROXY-URL": loopback() } });
    expect(expectProxyError(reply, 400).detail).toMatch(/Apple Pay token .* does not exist/);
  });

  it("checks the token again when a react that used it is replayed: a 409 once the caller lost apple-pay:reveal or apple-pay:read, or the token is gone", async () => {
    const { tenant, server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    const reactor = await createCodeReactor(tenant, "module.exports = async (req) => ({ raw: req.args });");
    const caller = await createApplication(tenant, {
      type: "private",
      name: "charging backend",
      permissions: ["token:use", "apple-pay:read", "apple-pay:reveal"],
    });
    const permit = async (permissions: string[]) => {
      const body = { name: "charging backend", permissions };
      expect((await call("PUT", `/applications/${caller.id}`, { key: tenant.managementKey, body })).status).toBe(200);
    };
    const args = { card: `{{ apple_pay: ${id} | json: '$.data.number' }}` };
    const replay = () => react(caller.key, reactor.id, args, { "SVC-IDEMPOTENCY-KEY": "charge-once" });
    const first = await replay();
    expect(first.status, first.text).toBe(200);
    expect(first.text).toContain(DPAN);
    expect((await replay()).headers.get("SVC-Idempotent-Replayed")).toBe("true");

    await permit(["token:use", "apple-pay:read"]);
    const masked = await replay();
    expect(expectProblem(masked, 409).detail).toMatch(new RegExp(`Apple Pay token ${id} is now shown masked`));
    expect(masked.text).not.toContain(DPAN);
    await permit(["token:use"]);
    expect(expectProblem(await replay(), 409).detail).toMatch(new RegExp(`Using Apple Pay token ${id} needs apple-pay:read`));
    await permit(["token:use", "apple-pay:read", "apple-pay:reveal"]);
    expect((await replay()).status).toBe(200);
    expect((await call("DELETE", `/apple-pay/${id}`, { key: server.key })).status).toBe(204);
    expect(expectProblem(await replay(), 409).detail).toMatch(new RegExp(`Apple Pay token ${id} does not exist or has expired`));
  });

  it("needs apple-pay:read to read and apple-pay:delete to delete, which only private applications hold", async () => {
    const { tenant, server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    const revealOnly = await createApplication(tenant, { type: "private", permissions: ["apple-pay:create", "apple-pay:reveal"] });
    expect(expectProblem(await call("GET", `/apple-pay/${id}`, { key: revealOnly.key }), 403).detail).toMatch(/apple-pay:read/);
    expect(expectProblem(await call("DELETE", `/apple-pay/${id}`, { key: revealOnly.key }), 403).detail).toMatch(/apple-pay:delete/);
    for (const permission of ["apple-pay:read", "apple-pay:reveal", "apple-pay:delete"]) {
      const refused = await call("POST", "/applications", {
        key: tenant.managementKey,
        body: { name: "page", type: "public", permissions: [permission] },
      });
      expectProblem(refused, 400);
    }
    expect((await call("GET", `/apple-pay/${id}`, { key: server.key })).status).toBe(200);
  });

  it("deletes the token with its card and cryptogram: 204, then 404", async () => {
    const { server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    expect((await call("DELETE", `/apple-pay/${id}`, { key: server.key })).status).toBe(204);
    expect(await storedToken(id)).toBeNull();
    expectProblem(await call("GET", `/apple-pay/${id}`, { key: server.key }), 404);
    expectProblem(await call("DELETE", `/apple-pay/${id}`, { key: server.key }), 404);
  });

  it("answers 404 to another tenant's token, and leaves it in place", async () => {
    const owner = await merchantTenant();
    const { id } = await createdToken(owner.server.key);
    const intruder = await seedTenant();
    const intruderServer = await createApplication(intruder, {
      type: "private",
      permissions: ["apple-pay:read", "apple-pay:reveal", "apple-pay:delete"],
    });
    const before = await storedToken(id);
    expectProblem(await call("GET", `/apple-pay/${id}`, { key: intruderServer.key }), 404);
    expectProblem(await call("DELETE", `/apple-pay/${id}`, { key: intruderServer.key }), 404);
    expect(await storedToken(id)).toEqual(before);
  });

  it("shows the cryptogram no longer than CARD_CVC_RETENTION_S, and the cron clears it from the row past then", async () => {
    const { server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    const deadline = (await storedToken(id))!.authentication_expires_at as number;
    expect(deadline).toBeGreaterThan(Date.now() + 3_500_000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 3_600_000);

    await runCron(Date.now());
    expect((await storedToken(id))!.authentication_ciphertext).not.toBeNull();
    await runCron(deadline + 1_000);
    const cleared = await storedToken(id);
    expect(cleared!.authentication_ciphertext).toBeNull();
    expect(cleared!.authentication_expires_at).toBeNull();
    const read = await call("GET", `/apple-pay/${id}`, { key: server.key });
    expect(read.body.data.number).toBe(DPAN);
    expect(read.body.authentication).toBeUndefined();
  });

  it("leaves the cryptogram out of reads once its retention has passed, before the cron runs", async () => {
    const { server } = await merchantTenant();
    const { id } = await createdToken(server.key, { CARD_CVC_RETENTION_S: "0" });
    expect((await storedToken(id))!.authentication_ciphertext).not.toBeNull();
    const read = await call("GET", `/apple-pay/${id}`, { key: server.key });
    expect(read.status).toBe(200);
    expect(read.body.authentication).toBeUndefined();
    expect(read.text).not.toContain(CRYPTOGRAM);
  });

  it("is gone past its expires_at: the cron deletes it", async () => {
    const { server } = await merchantTenant();
    const { id } = await createdToken(server.key);
    await runCron(Date.parse(EXPIRES_AT) - 1_000);
    expect(await storedToken(id)).not.toBeNull();
    await runCron(Date.parse(EXPIRES_AT));
    expect(await storedToken(id)).toBeNull();
    expectProblem(await call("GET", `/apple-pay/${id}`, { key: server.key }), 404);
  });
});
