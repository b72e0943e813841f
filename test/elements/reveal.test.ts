import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rig, startRig } from "./rig";

/*
 * Reveal (issue 27, step 3) in Debian's headless Chromium: the merchant's page creates a session, its
 * server authorizes the nonce for one card token, and a read-only text element shows the number.
 * The page (and its spy, ./merchant/spy.js) holds only references; the session key reads nothing else
 * and stops at its end; the nonce authorizes once.
 */

const VISA = "4242424242424242";
const MASTERCARD = "5555555555554444";

let rig: Rig;
let vault: Rig["vault"];
let merchant: Rig["merchant"];
let browser: Browser;
let publicKey: string;
let serverKey: string;
let card: { id: string };
let otherCard: { id: string };
/** How long the merchant's server lets the next sessions live; undefined: the session's own 3 minutes. */
let lifetimeMs: number | undefined;
/** The nonces the merchant's server authorized, and what the vault answered each time. */
const authorizations: { nonce: string; status: number; body: unknown }[] = [];

function callVault(method: string, path: string, key: string, body?: unknown, header = "SVC-API-KEY") {
  return rig.call(method, path, { [header]: key }, body);
}

/** The merchant's server: authorizes a session to reveal the one card token, by id. */
async function authorizeForCard(nonce: string) {
  const reply = await callVault("POST", "/sessions/authorize", serverKey, {
    nonce,
    rules: [
      {
        priority: 1,
        conditions: [{ attribute: "id", operator: "equals", value: card.id }],
        transform: "reveal",
        permissions: ["token:read"],
      },
    ],
    ...(lifetimeMs === undefined ? {} : { expires_at: new Date(Date.now() + lifetimeMs).toISOString() }),
  });
  authorizations.push({ nonce, ...reply });
  return reply;
}

beforeAll(async () => {
  rig = await startRig("elements-reveal-tests-build", authorizeForCard);
  ({ vault, merchant, browser } = rig);
  const tenant = (await callVault("POST", "/tenants", vault.operatorKey, { name: "reveal" }, "SVC-OPERATOR-KEY")).body;
  const management = tenant.application.key as string;
  const application = (body: unknown) => callVault("POST", "/applications", management, body).then((reply) => reply.body.key as string);
  publicKey = await application({ name: "checkout", type: "public", permissions: ["token:create"] });
  serverKey = await application({
    name: "backend",
    type: "private",
    rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "session:authorize"] }],
  });
  card = (await callVault("POST", "/tokens", serverKey, { type: "card_number", data: VISA })).body;
  otherCard = (await callVault("POST", "/tokens", serverKey, { type: "card_number", data: MASTERCARD })).body;
});

afterAll(() => rig?.close());

/** The merchant's page, its elements initialised with the public key, having revealed the card's number. */
async function reveal(): Promise<{
  page: Page;
  session: { sessionKey: string; nonce: string; expiresAt: string };
  token: any;
  close: () => Promise<void>;
}> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(merchant.url);
  await page.evaluate((key) => (globalThis as any).checkout.init(key), publicKey);
  const { session, token } = await page.evaluate((id) => (globalThis as any).checkout.reveal(id), card.id);
  return { page, session, token, close: () => context.close() };
}

const shownNumber = (page: Page) => page.frameLocator("#revealed iframe").locator('input[name="value"]');

describe("elements: revealing a token through a session", () => {
  it("the frame shows the number; the page's DOM, its messages and requests hold only a reference", async () => {
    const { page, token, close } = await reveal();
    await expect.poll(() => shownNumber(page).inputValue()).toBe(VISA);
    expect(await shownNumber(page).getAttribute("readonly")).not.toBeNull();
    expect(token).toMatchObject({ id: card.id, type: "card_number", data: expect.stringMatching(/^tvref_[0-9a-f]{32}$/) });
    const seen: string[] = await page.evaluate(() => (globalThis as any).readFrames());
    expect(seen.join("\n")).not.toContain(VISA);
    expect(seen.join("\n")).not.toContain("4242 4242");
    expect(seen.some((entry) => entry.startsWith("page DOM") && entry.includes('id="revealed"'))).toBe(true);
    await close();
  });

  it("no API of the page turns the reference into the value: a writable element refuses it, and so does a tokenize of the shown element", async () => {
    const { page, token, close } = await reveal();
    await expect.poll(() => shownNumber(page).inputValue()).toBe(VISA);
    const attempts = await page.evaluate(async (reference) => {
      const checkout = (globalThis as any).checkout;
      await checkout.mount("writable", "text", {});
      const { vault, elements } = checkout;
      const settle = checkout.settle.bind(checkout);
      return {
        writable: await settle(Promise.resolve().then(() => elements.writable.setValue(reference))),
        tokenized: await settle(vault.tokenize({ shown: elements.revealed })),
        created: await settle(vault.tokens.create({ type: "token", data: elements.revealed })),
      };
    }, token.data);
    expect(attempts.writable.ok).toBe(false);
    expect(attempts.tokenized).toMatchObject({ ok: false, problem: { status: 400 } });
    expect(attempts.created).toMatchObject({ ok: false, problem: { status: 400 } });
    const seen: string[] = await page.evaluate(() => (globalThis as any).readFrames());
    expect(seen.join("\n")).not.toContain(VISA);
    await close();
  });

  it("the session key reads no other token, and its nonce authorizes once", async () => {
    const { session, close } = await reveal();
    const other = await callVault("GET", `/tokens/${otherCard.id}`, session.sessionKey);
    expect([401, 403]).toContain(other.status);
    expect(JSON.stringify(other.body)).not.toContain(MASTERCARD);
    expect((await callVault("GET", `/tokens/${card.id}`, session.sessionKey)).body.data).toBe(VISA);
    const again = await authorizeForCard(session.nonce);
    expect(again.status).toBe(409);
    await close();
  });

  it("the session key answers 401 after expires_at", async () => {
    lifetimeMs = 2_000;
    try {
      const { page, session, close } = await reveal();
      await expect.poll(() => shownNumber(page).inputValue()).toBe(VISA);
      const end = authorizations.at(-1)!;
      expect(end.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      expect((await callVault("GET", `/tokens/${card.id}`, session.sessionKey)).status).toBe(401);
      await close();
    } finally {
      lifetimeMs = undefined;
    }
  });
});
