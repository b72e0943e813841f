import { join } from "node:path";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's current Node client, @basis-theory/node-sdk 5.7.0, unchanged, against the
 * vault with HEADER_PREFIX=BT: token intents as a checkout uses them. The page's public key creates an
 * intent; the merchant's server reads it, converts it into a token, and deletes the ones it refuses.
 */

const CARD = { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" };

let vault: Awaited<ReturnType<typeof startLocalVault>>;
/** The checkout page's client: a public application's key with token-intent:create. */
let page: BasisTheoryClient;
/** The merchant server's client: a private application's key that reads, deletes and converts intents. */
let server: BasisTheoryClient;

async function post(path: string, headers: Record<string, string>, body: unknown): Promise<any> {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  expect(reply.status, path).toBe(201);
  return reply.json();
}

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await post("/tenants", { "BT-OPERATOR-KEY": vault.operatorKey }, { name: "node sdk intents" });
  const management = { "BT-API-KEY": tenant.application.key as string };
  const checkout = await post("/applications", management, { name: "checkout", type: "public", permissions: ["token-intent:create"] });
  const backend = await post("/applications", management, {
    name: "backend",
    type: "private",
    rules: [
      {
        priority: 1,
        container: "/",
        transform: "reveal",
        permissions: ["token:create", "token:read", "token-intent:read", "token-intent:delete"],
      },
    ],
  });
  page = new BasisTheoryClient({ apiKey: checkout.key, baseUrl: vault.baseUrl });
  server = new BasisTheoryClient({ apiKey: backend.key, baseUrl: vault.baseUrl });
});

afterAll(async () => {
  await vault?.dispose();
});

describe("token intents through the Node SDK 5.7.0 with HEADER_PREFIX=BT", () => {
  it("tokenIntents.create with a public key answers the intent without its data, facts or fingerprint", async () => {
    const intent = await page.tokenIntents.create({ type: "card", data: CARD });
    expect(intent.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(intent.type).toBe("card");
    expect(intent.tenantId).toMatch(/^[0-9a-f-]{36}$/);
    expect(intent.expiresAt!.getTime() - intent.createdAt!.getTime()).toBe(24 * 60 * 60 * 1000);
    expect(intent.fingerprint).toBeUndefined();
    expect(intent.card).toBeUndefined();
    expect(JSON.stringify(intent)).not.toContain(CARD.number);
  });

  it("tokenIntents.get with a private key answers the card's facts and its fingerprint", async () => {
    const created = await page.tokenIntents.create({ type: "card", data: CARD });
    const intent = await server.tokenIntents.get(created.id!);
    expect(intent).toMatchObject({ id: created.id, type: "card", tenantId: created.tenantId });
    expect(intent.card).toMatchObject({ bin: "42424242", last4: "4242", expirationMonth: 12, expirationYear: 2030, brand: "visa" });
    expect(intent.fingerprint).toEqual(expect.any(String));
  });

  it("tokens.create with tokenIntentId converts the intent once, with a private key; a public key cannot", async () => {
    const created = await page.tokenIntents.create({ type: "card", data: CARD });
    await expect(page.tokens.create({ tokenIntentId: created.id })).rejects.toMatchObject({ statusCode: 403 });

    const token = await server.tokens.create({ tokenIntentId: created.id, metadata: { order: "42" } });
    expect(token).toMatchObject({ type: "card", metadata: { order: "42" }, containers: ["/pci/high/"] });
    expect(token.data).toEqual({ number: CARD.number, expiration_month: 12, expiration_year: 2030 });
    expect((await server.tokens.get(token.id!)).id).toBe(token.id);

    await expect(server.tokenIntents.get(created.id!)).rejects.toMatchObject({ statusCode: 404 });
    await expect(server.tokens.create({ tokenIntentId: created.id })).rejects.toMatchObject({ statusCode: 404 });
  });

  it("tokenIntents.delete removes an intent the server refuses", async () => {
    const created = await page.tokenIntents.create({ type: "card_number", data: "5555555555554444" });
    await server.tokenIntents.delete(created.id!);
    await expect(server.tokenIntents.get(created.id!)).rejects.toMatchObject({ statusCode: 404 });
    await expect(server.tokenIntents.delete(created.id!)).rejects.toMatchObject({ statusCode: 404 });
  });
});
