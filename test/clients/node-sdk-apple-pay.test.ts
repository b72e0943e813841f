import { join } from "node:path";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";
import { GALA_PKCS12_BASE64, GALA_TOKEN } from "../wallets/apple-pay-vector";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with HEADER_PREFIX=BT:
 * Apple Pay's merchant registrations and certificates (`applePay.merchant`, `.certificates`),
 * `applePay.create`, `.get` and `.delete`. The published token was signed years ago, and this vault
 * runs its real clock: the SDK's create reaches the signature check and is refused for its signing
 * time, which shows the request arrived whole; so no Apple Pay token exists here, and get and delete
 * are shown reaching their routes (404 for an unknown id, 403 without the permission).
 * test/wallets/apple-pay.test.ts decrypts the token with the window's clock moved, and reads and
 * deletes what it became.
 */

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let management: BasisTheoryClient;
let server: BasisTheoryClient;
let reader: BasisTheoryClient;

const client = (apiKey?: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-apple-pay-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk apple pay" }),
  }).then((reply) => reply.json() as Promise<any>);
  management = client(tenant.application.key);
  const application = await management.applications.create({ name: "server", type: "private", permissions: ["apple-pay:create"] });
  server = client(application.key);
  const readerApplication = await management.applications.create({
    name: "reader",
    type: "private",
    permissions: ["apple-pay:read", "apple-pay:reveal", "apple-pay:delete"],
  });
  reader = client(readerApplication.key);
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the Node SDK 5.7 against the vault with HEADER_PREFIX=BT: Apple Pay", () => {
  it("applePay.merchant and .certificates register, read and delete; the key is never answered", async () => {
    const merchant = await management.applePay.merchant.create({ merchantIdentifier: "merchant.test.spreedly.123merchant" });
    expect(merchant).toMatchObject({ id: expect.any(String), merchantIdentifier: "merchant.test.spreedly.123merchant" });
    expect(merchant.createdAt).toBeInstanceOf(Date);
    expect(await management.applePay.merchant.get(merchant.id!)).toMatchObject({ id: merchant.id });

    const certificates = await management.applePay.merchant.certificates.create(merchant.id!, {
      paymentProcessorCertificateData: GALA_PKCS12_BASE64,
      paymentProcessorCertificatePassword: "s3cret",
      domain: "shop.example.com",
    });
    expect(certificates).toMatchObject({
      id: expect.any(String),
      domain: "shop.example.com",
      paymentProcessorCertificateExpirationDate: new Date("2023-09-30T14:15:08.000Z"),
      paymentProcessorCertificateFingerprint: "57b44f751d2acdd7fe81e498fec1ccd6769d55391793c072594bed196f4dad84",
    });
    const read = await management.applePay.merchant.certificates.get(merchant.id!, certificates.id!);
    expect(read).toMatchObject({ id: certificates.id });
    expect(JSON.stringify(read)).not.toContain("PRIVATE");

    await management.applePay.merchant.certificates.delete(merchant.id!, certificates.id!);
    await expect(management.applePay.merchant.certificates.get(merchant.id!, certificates.id!)).rejects.toMatchObject({ statusCode: 404 });
    await management.applePay.merchant.delete(merchant.id!);
    await expect(management.applePay.merchant.get(merchant.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it("applePay.create posts the token as the vault reads it: today the published token is refused for its signing time", async () => {
    const merchant = await management.applePay.merchant.create({});
    await management.applePay.merchant.certificates.create(merchant.id!, {
      paymentProcessorCertificateData: GALA_PKCS12_BASE64,
      paymentProcessorCertificatePassword: "s3cret",
    });
    const refusal = await server.applePay
      .create({
        applePaymentData: { paymentData: GALA_TOKEN, transactionIdentifier: GALA_TOKEN.header.transactionId },
        merchantRegistrationId: merchant.id,
      })
      .catch((error: unknown) => error);
    expect(refusal).toMatchObject({ statusCode: 400 });
    expect(JSON.stringify((refusal as { body: unknown }).body)).toContain("signing time is outside the accepted window");
  });

  it("applePay.get and .delete reach GET and DELETE /apple-pay/{id}: an unknown id is a 404, a key without the permission a 403", async () => {
    const unknown = crypto.randomUUID();
    await expect(reader.applePay.get(unknown)).rejects.toMatchObject({ statusCode: 404 });
    await expect(reader.applePay.delete(unknown)).rejects.toMatchObject({ statusCode: 404 });
    const refused = await server.applePay.get(unknown).catch((error: unknown) => error);
    expect(refused).toMatchObject({ statusCode: 403 });
    expect(JSON.stringify((refused as { body: unknown }).body)).toContain("apple-pay:read");
    await expect(server.applePay.delete(unknown)).rejects.toMatchObject({ statusCode: 403 });
  });
});
