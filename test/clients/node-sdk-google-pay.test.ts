import { join } from "node:path";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";
import { CRYPTOGRAM_3DS, PAN_ONLY, paymentMessage, sealEcV2 } from "../support/google-pay";
import { GOOGLE_SIGNING_EC_V2_PUBLIC_KEY_X509_BASE64, MERCHANT_PRIVATE_KEY_PKCS8_BASE64 } from "../wallets/tink-ecv2-vectors";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with HEADER_PREFIX=BT:
 * `googlePay.merchant` and `googlePay.merchant.certificates` register the merchant and its key, and
 * `googlePay.create` decrypts a token sealed in node with Tink's published test keys into a token intent
 * (PAN_ONLY) or a google-pay resource (CRYPTOGRAM_3DS), which `googlePay.get` and `googlePay.delete` read and delete.
 */

const MERCHANT_IDENTIFIER = "01234567890123456789";

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let management: BasisTheoryClient;
let server: BasisTheoryClient;

const client = (apiKey?: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-google-pay-build");
  buildWorker(buildDir);
  const rootKeys = {
    keys: [{ keyValue: GOOGLE_SIGNING_EC_V2_PUBLIC_KEY_X509_BASE64, protocolVersion: "ECv2", keyExpiration: "4102444800000" }],
  };
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT", GOOGLE_PAY_ROOT_SIGNING_KEYS: JSON.stringify(rootKeys) } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk google pay" }),
  }).then((reply) => reply.json() as Promise<any>);
  management = client(tenant.application.key);
  const application = await management.applications.create({
    name: "server",
    type: "private",
    rules: [{ description: "all", priority: 1, container: "/", transform: "reveal", permissions: ["google-pay:create", "token:create"] }],
  });
  server = client(application.key);
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the Node SDK 5.7 against the vault with HEADER_PREFIX=BT: Google Pay", () => {
  it("googlePay.merchant and its certificates register, read and delete; the key is never answered", async () => {
    const merchant = await management.googlePay.merchant.create({ merchantIdentifier: "to-delete" });
    expect(merchant).toMatchObject({ id: expect.any(String), merchantIdentifier: "to-delete" });
    expect(await management.googlePay.merchant.get(merchant.id!)).toMatchObject({ id: merchant.id, merchantIdentifier: "to-delete" });
    const key = await management.googlePay.merchant.certificates.create(merchant.id!, {
      merchantCertificateData: MERCHANT_PRIVATE_KEY_PKCS8_BASE64,
    });
    expect(key.merchantCertificateFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(key)).not.toContain("MIGHAgEA");
    expect(await management.googlePay.merchant.certificates.get(merchant.id!, key.id!)).toMatchObject({ id: key.id });
    await management.googlePay.merchant.certificates.delete(merchant.id!, key.id!);
    await expect(management.googlePay.merchant.certificates.get(merchant.id!, key.id!)).rejects.toMatchObject({ statusCode: 404 });
    await management.googlePay.merchant.delete(merchant.id!);
    await expect(management.googlePay.merchant.get(merchant.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it("googlePay.create decrypts a PAN_ONLY token into a token intent, and refuses one signed for another merchant", async () => {
    const merchant = await management.googlePay.merchant.create({ merchantIdentifier: MERCHANT_IDENTIFIER });
    await management.googlePay.merchant.certificates.create(merchant.id!, { merchantCertificateData: MERCHANT_PRIVATE_KEY_PKCS8_BASE64 });
    const token = sealEcV2(paymentMessage(PAN_ONLY), { recipientId: `merchant:${MERCHANT_IDENTIFIER}` });
    const created = await server.googlePay.create({ googlePaymentData: token, merchantRegistrationId: merchant.id! });
    expect(created.tokenIntent).toMatchObject({ id: expect.any(String), type: "card" });
    const converted = await server.tokens.create({ tokenIntentId: created.tokenIntent!.id! });
    expect(converted.id).toEqual(expect.any(String));
    const stranger = sealEcV2(paymentMessage(PAN_ONLY), { recipientId: "merchant:someone-else" });
    await expect(server.googlePay.create({ googlePaymentData: stranger })).rejects.toMatchObject({ statusCode: 400 });
  });

  it("googlePay.create makes a google-pay resource of a CRYPTOGRAM_3DS token; googlePay.get reveals it, googlePay.delete deletes it", async () => {
    const merchant = await management.googlePay.merchant.create({ merchantIdentifier: "three-ds-merchant" });
    await management.googlePay.merchant.certificates.create(merchant.id!, { merchantCertificateData: MERCHANT_PRIVATE_KEY_PKCS8_BASE64 });
    const token = sealEcV2(paymentMessage(CRYPTOGRAM_3DS), { recipientId: "merchant:three-ds-merchant" });
    const created = await server.googlePay.create({ googlePaymentData: token, merchantRegistrationId: merchant.id! });
    expect(created.tokenIntent).toBeUndefined();
    expect(created.googlePay).toMatchObject({ id: expect.any(String), status: "active", card: { last4: "3478" } });
    const reader = await management.applications.create({
      name: "google pay reader",
      type: "private",
      permissions: ["google-pay:reveal", "google-pay:delete"],
    });
    const readerClient = client(reader.key);
    const read = await readerClient.googlePay.get(created.googlePay!.id!);
    expect(read).toMatchObject({
      id: created.googlePay!.id,
      data: { number: CRYPTOGRAM_3DS.pan, expiration_month: 12, expiration_year: 2030 },
      authentication: { threedsCryptogram: CRYPTOGRAM_3DS.cryptogram, eciIndicator: "07" },
      details: { tsp: "Google", authMethod: "CRYPTOGRAM_3DS" },
    });
    await readerClient.googlePay.delete(created.googlePay!.id!);
    await expect(readerClient.googlePay.get(created.googlePay!.id!)).rejects.toMatchObject({ statusCode: 404 });
  });
});
