import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rig, startRig } from "./rig";

/*
 * vault.tokenIntents.create in Debian's headless Chromium: a card typed into the elements becomes a
 * token intent, sent by the frames as vault.tokens.create sends a token. The page gets the intent's id
 * and times, never the card nor its facts; the merchant's server reads the facts and converts it.
 */

const VISA = "4242424242424242";
const YEAR = new Date().getFullYear() + 3;
/** December, three years on, as typed: "12" and the year's last two digits. */
const EXPIRATION = `12${String(YEAR).slice(2)}`;

let rig: Rig;
let publicKey: string;
let serverKey: string;

async function post(path: string, key: string, body: unknown, header = "SVC-API-KEY") {
  return (await rig.call("POST", path, { [header]: key }, body)).body;
}

beforeAll(async () => {
  rig = await startRig("elements-intents-build");
  const tenant = await post("/tenants", rig.vault.operatorKey, { name: "intents" }, "SVC-OPERATOR-KEY");
  const management = tenant.application.key as string;
  publicKey = (await post("/applications", management, { name: "checkout", type: "public", permissions: ["token-intent:create"] })).key;
  serverKey = (
    await post("/applications", management, {
      name: "backend",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "token-intent:read"] }],
    })
  ).key;
});

afterAll(() => rig?.close());

/** The merchant's checkout page with a card element mounted and a card typed into it; what the page sent, for inspection. */
async function checkoutWithCard() {
  const context = await rig.browser.newContext();
  const page = await context.newPage();
  const requests: { from: string; url: string; body: string }[] = [];
  page.on("request", (request) => {
    let from = "";
    try {
      from = new URL(request.frame().url()).origin;
    } catch {}
    requests.push({ from, url: request.url(), body: request.postData() ?? "" });
  });
  await page.goto(rig.merchant.url);
  await page.evaluate((key) => (globalThis as any).checkout.init(key), publicKey);
  await page.evaluate(() => (globalThis as any).checkout.mount("card", "card", {}));
  const input = (name: string) => page.frameLocator("#card iframe").locator(`input[name="${name}"]`);
  await input("number").pressSequentially(VISA);
  await input("expiration").pressSequentially(EXPIRATION);
  await input("cvc").pressSequentially("123");
  await expect.poll(() => page.evaluate(() => (globalThis as any).checkout.lastChange("card")?.complete)).toBe(true);
  return { page, requests, close: () => context.close() };
}

/** Runs `vault.<call>` in the merchant's page with its elements in scope: what it resolved to, or the problem. */
function send(page: Page, call: string): Promise<{ ok: boolean; body?: any; problem?: any }> {
  return page.evaluate(`(() => { const { vault, elements } = checkout; return checkout.settle(${call}); })()`);
}

describe("elements: vault.tokenIntents.create", () => {
  it("a typed card becomes an intent: the page gets its id and times only, the server its facts, and converts it into the card as typed", async () => {
    const { page, close } = await checkoutWithCard();
    const created = await send(page, `vault.tokenIntents.create({ type: "card", data: elements.card })`);
    expect(created.ok, JSON.stringify(created.problem)).toBe(true);
    expect(Object.keys(created.body).sort()).toEqual(["created_at", "created_by", "expires_at", "id", "tenant_id", "type"]);
    expect(created.body.type).toBe("card");

    const read = await rig.call("GET", `/token-intents/${created.body.id}`, { "SVC-API-KEY": serverKey });
    expect(read.body.card).toEqual({ bin: "42424242", last4: "4242", expiration_month: 12, expiration_year: YEAR, brand: "visa" });
    const converted = await rig.call("POST", "/tokens", { "SVC-API-KEY": serverKey }, { token_intent_id: created.body.id });
    expect(converted.status).toBe(201);
    expect(converted.body.data).toEqual({ number: VISA, expiration_month: 12, expiration_year: YEAR });
    await close();
  });

  it("the number goes only from a frame to the vault's /token-intents; nothing the merchant's origin sends or receives holds it", async () => {
    const { page, requests, close } = await checkoutWithCard();
    const created = await send(page, `vault.tokenIntents.create({ type: "card", data: elements.card })`);
    expect(created.ok).toBe(true);
    expect(JSON.stringify(created.body)).not.toContain(VISA);
    const carrying = requests.filter((request) => `${request.url} ${request.body}`.includes(VISA));
    expect(carrying).toEqual([{ from: rig.vault.baseUrl, url: `${rig.vault.baseUrl}/token-intents`, body: expect.any(String) }]);
    expect(rig.merchant.received.filter((request) => request.includes(VISA))).toEqual([]);
    await close();
  });

  it("an element's value may stand only in the intent's data: anywhere else the frame refuses the request before sending it", async () => {
    const { page, requests, close } = await checkoutWithCard();
    for (const request of [
      `vault.tokenIntents.create({ type: "card_number", data: "x", note: elements.card })`,
      `vault.tokenIntents.create([elements.card])`,
    ]) {
      const refused = await send(page, request);
      expect(refused, request).toMatchObject({ ok: false, problem: { status: 400 } });
    }
    expect(requests.filter((request) => request.url.startsWith(`${rig.vault.baseUrl}/token-intents`))).toEqual([]);
    await close();
  });
});
