import { join } from "node:path";
import { BasisTheory, BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with HEADER_PREFIX=BT:
 * Apple Pay on the web's domains (`applePay.domain.register|registerAll|get|deregister`) and merchant
 * sessions (`applePay.session.create`). Apple's servers are the fake the workerd suite binds too
 * (test/support/fake-apple-pay-gateway.mjs), here a worker beside the vault bound as APPLE_PAY_GATEWAY.
 */

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let management: BasisTheoryClient;
let page: BasisTheoryClient;
let tenantId: string;

const client = (apiKey?: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-apple-pay-web-build");
  buildWorker(buildDir);
  vault = await startLocalVault({
    buildDir,
    bindings: { HEADER_PREFIX: "BT" },
    workers: [
      { name: "fake-apple-pay-gateway", modules: true, scriptPath: join(process.cwd(), "test/support/fake-apple-pay-gateway.mjs") },
    ],
    serviceBindings: { APPLE_PAY_GATEWAY: "fake-apple-pay-gateway" },
  });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk apple pay web" }),
  }).then((reply) => reply.json() as Promise<any>);
  tenantId = tenant.tenant.id;
  management = client(tenant.application.key);
  const application = await management.applications.create({ name: "checkout page", type: "public", permissions: ["apple-pay:session"] });
  page = client(application.key);
});

afterAll(async () => {
  await vault?.dispose();
});

/** What the fake Apple received. */
async function received(): Promise<{ url: string; body: any }[]> {
  return (await fetch(`${await vault.urlOf("fake-apple-pay-gateway")}/received`)).json() as Promise<any>;
}

describe("the Node SDK 5.7 against the vault with HEADER_PREFIX=BT: Apple Pay on the web", () => {
  it("applePay.domain.register, registerAll, get and deregister keep the tenant's domains with Apple", async () => {
    expect(await management.applePay.domain.register({ domain: "Shop.Example.com" })).toEqual({
      domains: [{ domain: "shop.example.com", status: "verified" }],
    });
    const all = await management.applePay.domain.registerAll({ domains: ["shop.example.com", "pay.example.com"] });
    expect(all.domains?.map((entry) => entry.domain)).toEqual(["pay.example.com", "shop.example.com"]);
    expect(await management.applePay.domain.get()).toEqual(all);
    await management.applePay.domain.deregister({ domain: "shop.example.com" });
    expect(await management.applePay.domain.get()).toEqual({ domains: [{ domain: "pay.example.com", status: "verified" }] });
    expect(
      (await received()).map(({ url, body }) => [url.split("/").at(-1), body.domainNames, body.partnerInternalMerchantIdentifier]),
    ).toEqual([
      ["registerMerchant", ["shop.example.com"], tenantId],
      ["registerMerchant", ["pay.example.com"], tenantId],
      ["unregisterMerchant", ["shop.example.com"], tenantId],
    ]);
  });

  it("a domain Apple cannot verify is the SDK's UnprocessableEntityError", async () => {
    await expect(management.applePay.domain.register({ domain: "unverified.example.com" })).rejects.toBeInstanceOf(
      BasisTheory.UnprocessableEntityError,
    );
  });

  it("applePay.session.create answers Apple's merchant session, as the JSON text its string type says", async () => {
    const text = await page.applePay.session.create({
      validationUrl: "https://apple-pay-gateway.apple.com/paymentservices/paymentSession",
      displayName: "My Store",
      domain: "pay.example.com",
    });
    expect(text).toEqual(expect.any(String));
    const session = JSON.parse(text);
    expect(session).toMatchObject({ merchantIdentifier: tenantId, domainName: "pay.example.com", displayName: "My Store" });
    expect(session.merchantSessionIdentifier).toMatch(/^SSH-/);
  });

  it("applePay.session.create refuses another host's validation URL (BadRequestError) and a key without apple-pay:session (ForbiddenError)", async () => {
    const before = (await received()).length;
    await expect(
      page.applePay.session.create({
        validationUrl: "https://evil.example/paymentservices/paymentSession",
        displayName: "x",
        domain: "pay.example.com",
      }),
    ).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
    await expect(management.applePay.session.create({ displayName: "x", domain: "pay.example.com" })).rejects.toBeInstanceOf(
      BasisTheory.ForbiddenError,
    );
    expect(await received()).toHaveLength(before);
  });
});
