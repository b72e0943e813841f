import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rig, startRig } from "./rig";

/*
 * Reveal (issue 27, step 3; issue 34) in Debian's headless Chromium: the merchant's page creates a
 * session, its server authorizes the nonce for one card token, and a read-only text element shows the
 * number. The session key stays in the frame that created the session; the page (and its spy,
 * ./merchant/spy.js) holds a handle, the nonce and references. The key reads nothing else and stops at
 * its end; the nonce authorizes once; the frame sends only token ids.
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
/** How long the merchant's server lets the next sessions live; undefined: the session's own minute. */
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
  publicKey = await application({ name: "checkout", type: "public", permissions: ["token:create", "token-intent:create"] });
  serverKey = await application({
    name: "backend",
    type: "private",
    rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "session:authorize"] }],
  });
  card = (await callVault("POST", "/tokens", serverKey, { type: "card_number", data: VISA })).body;
  otherCard = (await callVault("POST", "/tokens", serverKey, { type: "card_number", data: MASTERCARD })).body;
});

afterAll(() => rig?.close());

/** The merchant's page with its elements initialised with the public key, and the session keys the vault answered its frames. */
async function openCheckout() {
  const context = await browser.newContext();
  const page = await context.newPage();
  const sessionKeys: string[] = [];
  const vaultRequests: string[] = [];
  page.on("request", (request) => {
    if (request.url().startsWith(vault.baseUrl) && !request.url().includes("/elements/"))
      vaultRequests.push(`${request.method()} ${request.url()}`);
  });
  page.on("response", async (response) => {
    if (response.request().method() === "POST" && response.url() === `${vault.baseUrl}/sessions`) {
      sessionKeys.push((await response.json()).session_key);
    }
  });
  await page.goto(merchant.url);
  await page.evaluate((key) => (globalThis as any).checkout.init(key), publicKey);
  return { page, sessionKeys, vaultRequests, close: () => context.close() };
}

/** The merchant's page, having revealed the card's number; `sessionKey` is what the vault answered the frame, which the page never saw. */
async function reveal() {
  const opened = await openCheckout();
  const revealed: { session: any; token: any; timings: Record<string, number> } = await opened.page.evaluate(
    (id) => (globalThis as any).checkout.reveal(id),
    card.id,
  );
  await expect.poll(() => opened.sessionKeys.length).toBe(1);
  return { ...opened, ...revealed, sessionKey: opened.sessionKeys[0]! };
}

/** Runs `vault.<call>` in the merchant's page with its elements in scope: what it resolved to, or the problem. */
function send(page: Page, call: string): Promise<{ ok: boolean; body?: any; problem?: any }> {
  return page.evaluate(`(() => { const { vault, elements, revealed } = checkout; return checkout.settle(${call}); })()`);
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

  it("the page never holds the session key: not in any message it receives, nor in what sessions.create and tokens.retrieve resolve to", async () => {
    const { page, session, token, sessionKey, close } = await reveal();
    await expect.poll(() => shownNumber(page).inputValue()).toBe(VISA);
    expect(sessionKey).toMatch(/\S{20,}/);
    expect(Object.keys(session).sort()).toEqual(["expiresAt", "handle", "nonce"]);
    expect(session.handle).toMatch(/^tvses_[0-9a-f]{32}$/);
    // The spy (./merchant/spy.js) keeps every message event the page receives, every request it sends and its DOM.
    const seen: string[] = await page.evaluate(() => (globalThis as any).readFrames());
    expect(seen.some((entry) => entry.startsWith("message from") && entry.includes(session.nonce))).toBe(true);
    const held = [
      ...seen,
      JSON.stringify({ session, token }),
      JSON.stringify(await page.evaluate(() => (globalThis as any).checkout.revealed)),
    ];
    expect(held.join("\n")).not.toContain(sessionKey);
    expect(merchant.received.join("\n")).not.toContain(sessionKey);
    await close();
  });

  it("tokens.retrieve refuses what is not a token id ('.', '..', '', 'a/b', '?x' …) in the frame, before any request to the vault", async () => {
    const { page, vaultRequests, close } = await reveal();
    const before = vaultRequests.length;
    for (const id of [".", "..", "...", "", "a/b", "?x", "a#b", "%2e%2e", " abc"]) {
      const refused = await send(page, `vault.tokens.retrieve(${JSON.stringify(id)}, { session: revealed.session })`);
      expect(refused, id).toMatchObject({ ok: false, problem: { status: 400, detail: expect.stringContaining("takes a token id") } });
    }
    expect(vaultRequests.slice(before)).toEqual([]);
    // The same session still retrieves a token by its id.
    const retrieved = await send(page, `vault.tokens.retrieve(${JSON.stringify(card.id)}, { session: revealed.session.handle })`);
    expect(retrieved).toMatchObject({ ok: true, body: { id: card.id } });
    expect(vaultRequests.slice(before)).toEqual([`GET ${vault.baseUrl}/tokens/${card.id}`]);
    await close();
  });

  it("tokens.retrieve takes no { apiKey }: elements.js and the frame (to an elements.js of before) answer 400 naming the new call", async () => {
    const { page, sessionKey, vaultRequests, close } = await reveal();
    const before = vaultRequests.length;
    const fromPage = await send(page, `vault.tokens.retrieve(${JSON.stringify(card.id)}, { apiKey: ${JSON.stringify(sessionKey)} })`);
    expect(fromPage).toMatchObject({
      ok: false,
      problem: { status: 400, detail: expect.stringContaining("tokens.retrieve(id, { session })") },
    });
    // What an elements.js cached from before this change sends the frame.
    const fromOldScript = await page.evaluate(
      ([id, apiKey]) => (globalThis as any).checkout.submitToFrame("revealed", "tokens.retrieve", { id, apiKey }),
      [card.id, sessionKey] as const,
    );
    expect(fromOldScript).toMatchObject({
      ok: false,
      problem: { status: 400, detail: expect.stringContaining("tokens.retrieve(id, { session })") },
    });
    expect(vaultRequests.slice(before)).toEqual([]);
    await close();
  });

  it("a session lives in the frame that created it: retrieve is sent there, no other frame knows its handle, and unmounting ends it", async () => {
    const { page, close } = await openCheckout();
    // The first mounted element's frame creates the session; the read-only element shows the number from it.
    await page.evaluate(() => (globalThis as any).checkout.mount("holder", "text", {}));
    await page.evaluate((id) => (globalThis as any).checkout.reveal(id), card.id);
    await expect.poll(() => shownNumber(page).inputValue()).toBe(VISA);
    const elsewhere = await page.evaluate((id) => {
      const { checkout } = globalThis as any;
      return checkout.submitToFrame("revealed", "tokens.retrieve", { id, session: checkout.revealed.session.handle });
    }, card.id);
    expect(elsewhere).toMatchObject({ ok: false, problem: { status: 400 } });
    await page.evaluate(() => (globalThis as any).checkout.elements.holder.unmount());
    const ended = await send(page, `vault.tokens.retrieve(${JSON.stringify(card.id)}, { session: revealed.session })`);
    expect(ended).toMatchObject({ ok: false, problem: { status: 400, detail: expect.stringContaining("unmounted") } });
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

  it("the session key (leaked from the frame) reads no other token, and its nonce authorizes once", async () => {
    const { session, sessionKey, close } = await reveal();
    const other = await callVault("GET", `/tokens/${otherCard.id}`, sessionKey);
    expect([401, 404]).toContain(other.status);
    expect(JSON.stringify(other.body)).not.toContain(MASTERCARD);
    expect((await callVault("GET", `/tokens/${card.id}`, sessionKey)).body.data).toBe(VISA);
    const again = await authorizeForCard(session.nonce);
    expect(again.status).toBe(409);
    await close();
  });

  it("the session key answers 401 after expires_at, in the frame and anywhere else", async () => {
    lifetimeMs = 2_000;
    try {
      const { page, sessionKey, close } = await reveal();
      await expect.poll(() => shownNumber(page).inputValue()).toBe(VISA);
      const end = authorizations.at(-1)!;
      expect(end.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      expect((await callVault("GET", `/tokens/${card.id}`, sessionKey)).status).toBe(401);
      const late = await send(page, `vault.tokens.retrieve(${JSON.stringify(card.id)}, { session: revealed.session })`);
      expect(late).toMatchObject({ ok: false, problem: { status: 401 } });
      await close();
    } finally {
      lifetimeMs = undefined;
    }
  });

  it("the demo (/elements/demo/) tokenizes a card and reveals its number once the curl it prints authorizes the session, and makes a token intent its printed curl converts", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const refusedByPolicy: string[] = [];
    page.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) refusedByPolicy.push(message.text());
    });
    // The demo is a page of the vault's origin: only its own scripts, and no other site may frame it.
    const answer = await page.goto(`${vault.baseUrl}/elements/demo/`);
    expect((await answer!.allHeaders())["content-security-policy"]).toContain("frame-ancestors 'none'");
    await page.fill("#public-key", publicKey);
    await page.click("#start button");
    const card = page.frameLocator("#card iframe");
    await card.locator('input[name="number"]').pressSequentially(VISA);
    await card.locator('input[name="expiration"]').pressSequentially(`12${String(new Date().getFullYear() + 3).slice(2)}`);
    await card.locator('input[name="cvc"]').pressSequentially("123");
    await page.frameLocator("#name iframe").locator('input[name="value"]').fill("Ada Lovelace");
    await page.click("#checkout button");
    await page.click("#create-session");
    await expect.poll(() => page.textContent("#authorize")).toContain("/sessions/authorize");
    const grant = JSON.parse(/-d '([^']+)' \S+\/sessions\/authorize/.exec((await page.textContent("#authorize"))!)![1]!);
    expect((await callVault("POST", "/sessions/authorize", serverKey, grant)).status).toBe(200);
    await page.click("#retrieve");
    await expect.poll(() => page.frameLocator("#number iframe").locator('input[name="value"]').inputValue()).toBe(VISA);
    expect(refusedByPolicy).toEqual([]);
    // The same card as a token intent: the page shows its id and the curl that converts it, never the card.
    await page.click("#intent");
    await expect.poll(() => page.textContent("#answer")).toContain("token_intent_id");
    const shown = (await page.textContent("#answer"))!;
    expect(shown).not.toContain(VISA.slice(-4));
    const conversion = JSON.parse(/-d '([^']+)' \S+\/tokens/.exec(shown)![1]!);
    const converted = await callVault("POST", "/tokens", serverKey, conversion);
    expect(converted.status).toBe(201);
    expect(converted.body).toMatchObject({ type: "card", data: { number: VISA } });
    await context.close();
  });

  it("create → authorize → retrieve takes well under a second here, far inside a pending session's minute", async () => {
    const { page, close } = await openCheckout();
    const runs: { create: number; authorize: number; retrieve: number }[] = [];
    for (let run = 0; run < 10; run++) {
      runs.push((await page.evaluate((id) => (globalThis as any).checkout.reveal(id), card.id)).timings);
    }
    const totals = runs.map(({ create, authorize, retrieve }) => create + authorize + retrieve).sort((a, b) => a - b);
    const pending = runs.map(({ create, authorize }) => create + authorize).sort((a, b) => a - b);
    console.info(
      `reveal flow over ${runs.length} runs (performance.now() in the page): create → authorize → retrieve median ` +
        `${totals[5]!.toFixed(0)} ms, max ${totals.at(-1)!.toFixed(0)} ms; create → authorized median ${pending[5]!.toFixed(0)} ms, ` +
        `max ${pending.at(-1)!.toFixed(0)} ms`,
    );
    expect(totals.at(-1)).toBeLessThan(5_000);
    await close();
  });
});
