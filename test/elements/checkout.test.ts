import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rig, startRig } from "./rig";

/*
 * The browser elements in Debian's headless Chromium (CHROMIUM_PATH or /usr/bin/chromium), against
 * a vault serving its static assets as production does. The merchant's checkout page comes from a
 * second loopback origin (localhost; the vault is 127.0.0.1), and its own script spies on everything
 * it can reach (./merchant/spy.js): what is typed into the frames must never be among it.
 */

const VISA = "4242424242424242";
const AMEX = "378282246310005";
const YEAR = new Date().getFullYear() + 3;
/** December, three years on, as typed: "12" and the year's last two digits. */
const EXPIRATION = `12${String(YEAR).slice(2)}`;
const NAME = "Ada Lovelace-Byron";

let rig: Rig;
let vault: Rig["vault"];
let merchant: Rig["merchant"];
let browser: Browser;
let publicKey: string;
let privateKey: string;

async function post(path: string, key: string, body: unknown, header = "SVC-API-KEY") {
  return (await rig.call("POST", path, { [header]: key }, body)).body;
}

beforeAll(async () => {
  rig = await startRig("elements-tests-build");
  ({ vault, merchant, browser } = rig);
  const tenant = await post("/tenants", vault.operatorKey, { name: "elements" }, "SVC-OPERATOR-KEY");
  const management = tenant.application.key as string;
  publicKey = (await post("/applications", management, { name: "checkout", type: "public", permissions: ["token:create"] })).key;
  privateKey = (
    await post("/applications", management, {
      name: "backend",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:read"] }],
    })
  ).key;
});

afterAll(() => rig?.close());

interface SeenRequest {
  /** The origin of the document that sent it. */
  from: string;
  method: string;
  url: string;
  headers: string;
  body: string;
}

/** The merchant's checkout page in a fresh browser context, with the elements initialised with the public key. */
async function openCheckout() {
  const context = await browser.newContext();
  const page = await context.newPage();
  const requests: SeenRequest[] = [];
  page.on("request", (request) => {
    let from = "";
    try {
      from = new URL(request.frame().url()).origin;
    } catch {}
    requests.push({
      from,
      method: request.method(),
      url: request.url(),
      headers: JSON.stringify(request.headers()),
      body: request.postData() ?? "",
    });
  });
  await page.goto(merchant.url);
  await page.evaluate((key) => (globalThis as any).checkout.init(key), publicKey);
  return { page, requests, close: () => context.close() };
}

function mount(page: Page, name: string, kind: string, options: object = {}) {
  return page.evaluate(([name, kind, options]) => (globalThis as any).checkout.mount(name, kind, options), [name, kind, options] as const);
}

/** An input of the element's frame, as the user reaches it. */
function field(page: Page, element: string, input: "number" | "expiration" | "cvc" | "value") {
  return page.frameLocator(`#${element} iframe`).locator(`input[name="${input}"]`);
}

function lastChange(page: Page, element: string) {
  return page.evaluate((name) => (globalThis as any).checkout.lastChange(name), element);
}

function changes(page: Page, element: string): Promise<any[]> {
  return page.evaluate(
    (name) =>
      (globalThis as any).checkout.events
        .filter((entry: any) => entry.element === name && entry.event === "change")
        .map((entry: any) => entry.payload),
    element,
  );
}

/** Runs `vault.<call>` in the merchant's page with its elements in scope: what it resolved to, or the problem. */
function send(page: Page, call: string): Promise<{ ok: boolean; body?: any; problem?: any }> {
  return page.evaluate(`(() => { const { vault, elements } = checkout; return checkout.settle(${call}); })()`);
}

async function readToken(id: string) {
  const reply = await fetch(`${vault.baseUrl}/tokens/${id}`, { headers: { "SVC-API-KEY": privateKey } });
  expect(reply.status).toBe(200);
  return (await reply.json()) as any;
}

async function typeCard(page: Page, element: string, number = VISA) {
  await field(page, element, "number").pressSequentially(number);
  await field(page, element, "expiration").pressSequentially(EXPIRATION);
  await field(page, element, "cvc").pressSequentially("123");
  await expect.poll(async () => (await lastChange(page, element))?.complete).toBe(true);
}

describe("elements: tokenization from a merchant's page", () => {
  it("a card typed into the card element becomes a card token that a private key reads back as typed", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "card", "card");
    await typeCard(page, "card");

    const created = await send(page, `vault.tokens.create({ type: "card", data: elements.card, metadata: { order: "42" } })`);
    expect(created.ok).toBe(true);
    expect(created.body).toMatchObject({ type: "card", metadata: { order: "42" } });
    expect(JSON.stringify(created.body)).not.toContain(VISA);
    const token = await readToken(created.body.id);
    expect(token.data).toEqual({ number: VISA, expiration_month: 12, expiration_year: YEAR, cvc: "123" });
    await close();
  });

  it("the merchant page's own script never sees the typed values: contentDocument, every message event, fetch and XMLHttpRequest", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "card", "card");
    await mount(page, "name", "text", { label: "Name on the card" });
    await typeCard(page, "card");
    await field(page, "name", "value").fill(NAME);
    const tokens = await send(page, `vault.tokenize({ card: { type: "card", data: elements.card }, name: elements.name })`);
    expect(tokens.ok).toBe(true);

    const seen: string[] = await page.evaluate(() => (globalThis as any).readFrames());
    const everything = seen.join("\n");
    expect(everything).not.toContain(VISA);
    expect(everything).not.toContain("4242 4242 4242 4242");
    expect(everything).not.toContain(NAME);
    // The spy did reach what it could: the frames refused their documents, and it saw the elements' messages.
    expect(seen.filter((entry) => entry.startsWith("contentDocument refused") || entry === "contentDocument null")).toHaveLength(2);
    expect(seen.filter((entry) => entry.startsWith("contentWindow.document refused"))).toHaveLength(2);
    expect(seen.some((entry) => entry.startsWith(`message from ${vault.baseUrl}`) && entry.includes('"cardLast4":"4242"'))).toBe(true);
    await close();
  });

  it("no request sent from the merchant's origin carries the typed number; the frames send it only to the vault", async () => {
    const { page, requests, close } = await openCheckout();
    await mount(page, "card", "card");
    await typeCard(page, "card");
    expect((await send(page, `vault.tokens.create({ type: "card", data: elements.card })`)).ok).toBe(true);

    const carrying = requests.filter((request) => `${request.url} ${request.headers} ${request.body}`.includes(VISA));
    expect(carrying).toEqual([expect.objectContaining({ from: vault.baseUrl, method: "POST", url: `${vault.baseUrl}/tokens` })]);
    expect(requests.filter((request) => request.from === merchant.url).length).toBeGreaterThan(0);
    expect(merchant.received.filter((request) => request.includes(VISA))).toEqual([]);
    await close();
  });

  it("change events carry the brand, completeness and, once complete and valid, the BIN and last four, never the number", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "number", "cardNumber");
    await field(page, "number", "number").pressSequentially("4242");
    await expect
      .poll(() => lastChange(page, "number"))
      .toEqual({
        elementType: "cardNumber",
        empty: false,
        complete: false,
        valid: true,
        errors: [{ field: "number", code: "incomplete" }],
        cardBrand: "visa",
      });
    await field(page, "number", "number").pressSequentially(VISA.slice(4));
    await expect
      .poll(() => lastChange(page, "number"))
      .toEqual({
        elementType: "cardNumber",
        empty: false,
        complete: true,
        valid: true,
        errors: [],
        cardBrand: "visa",
        cardBin: "424242",
        cardLast4: "4242",
      });
    expect(await field(page, "number", "number").inputValue()).toBe("4242 4242 4242 4242");

    await field(page, "number", "number").fill("");
    await field(page, "number", "number").pressSequentially(AMEX);
    await expect.poll(() => lastChange(page, "number")).toMatchObject({ complete: true, cardBrand: "american-express", cardLast4: "0005" });
    expect(await field(page, "number", "number").inputValue()).toBe("3782 822463 10005");

    const all = JSON.stringify(await changes(page, "number"));
    expect(all).not.toContain(VISA);
    expect(all).not.toContain(AMEX);
    expect((await changes(page, "number")).filter((change) => change.cardBin !== undefined && !change.complete)).toEqual([]);
    await close();
  });

  it("an invalid number gives luhn or invalid, an expired or impossible date expired or invalid, and neither is sent", async () => {
    const { page, requests, close } = await openCheckout();
    await mount(page, "card", "card");
    await field(page, "card", "number").pressSequentially("4242424242424241");
    await expect
      .poll(() => lastChange(page, "card"))
      .toMatchObject({
        valid: false,
        errors: expect.arrayContaining([{ field: "number", code: "luhn" }]),
        cardBrand: "visa",
      });
    expect(await lastChange(page, "card")).not.toHaveProperty("cardLast4");
    await field(page, "card", "number").fill("9999");
    await expect.poll(async () => (await lastChange(page, "card")).errors).toContainEqual({ field: "number", code: "invalid" });

    await field(page, "card", "number").fill(VISA);
    await field(page, "card", "expiration").pressSequentially("0120");
    await expect.poll(async () => (await lastChange(page, "card")).errors).toContainEqual({ field: "expiration", code: "expired" });
    await field(page, "card", "expiration").fill("13");
    await expect.poll(async () => (await lastChange(page, "card")).errors).toContainEqual({ field: "expiration", code: "invalid" });

    await field(page, "card", "expiration").fill("0120");
    await field(page, "card", "cvc").pressSequentially("123");
    const refused = await send(page, `vault.tokens.create({ type: "card", data: elements.card })`);
    expect(refused).toEqual({
      ok: false,
      problem: {
        status: 400,
        title: "Bad Request",
        detail: expect.stringContaining("expiration: expired"),
        errors: { "$.data": ["expiration: expired"] },
      },
    });
    expect(requests.filter((request) => request.url.startsWith(`${vault.baseUrl}/tokens`))).toEqual([]);
    await close();
  });

  it("split fields and a text element tokenize through tokenize, the frames gathering the values among themselves", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "number", "cardNumber");
    await mount(page, "expiration", "cardExpirationDate");
    await mount(page, "cvc", "cardVerificationCode");
    await mount(page, "name", "text");
    await field(page, "number", "number").pressSequentially(AMEX);
    await field(page, "expiration", "expiration").pressSequentially(EXPIRATION);
    // The security code's frame follows the brand typed in the number's: four digits for American Express.
    await field(page, "cvc", "cvc").pressSequentially("12345");
    await expect.poll(() => field(page, "cvc", "cvc").inputValue()).toBe("1234");
    await expect.poll(async () => (await lastChange(page, "cvc"))?.complete).toBe(true);
    await field(page, "name", "value").fill(NAME);

    const answer = await send(
      page,
      `vault.tokenize({
        card: {
          type: "card",
          data: {
            number: elements.number,
            expiration_month: elements.expiration.month(),
            expiration_year: elements.expiration.year(),
            cvc: elements.cvc,
          },
        },
        name: elements.name,
        reference: "order 42",
      })`,
    );
    expect(answer.ok).toBe(true);
    expect(answer.body.card).toMatchObject({ type: "card" });
    expect(typeof answer.body.name).toBe("string");
    expect(typeof answer.body.reference).toBe("string");
    expect((await readToken(answer.body.card.id)).data).toEqual({ number: AMEX, expiration_month: 12, expiration_year: YEAR, cvc: "1234" });
    expect((await readToken(answer.body.name)).data).toBe(NAME);
    expect((await readToken(answer.body.reference)).data).toBe("order 42");
    await close();
  });

  it("a request may hold an element's value only in a token request's data, without expressions the answer would show", async () => {
    const { page, requests, close } = await openCheckout();
    await mount(page, "name", "text");
    await field(page, "name", "value").fill(NAME);
    const refusals = [
      `vault.tokens.create({ type: "token", data: elements.name, mask: "{{ data }}" })`,
      `vault.tokens.create({ type: "token", data: "x", metadata: { name: elements.name } })`,
      `vault.tokenize({ holder: { type: "token", data: elements.name, id: "{{ data }}" } })`,
      `vault.tokenize({ holder: { type: elements.name, data: "x" } })`,
    ];
    for (const call of refusals) {
      const answer = await send(page, call);
      expect(answer, call).toMatchObject({ ok: false, problem: { status: 400, title: "Bad Request" } });
    }
    expect(requests.filter((request) => request.url.startsWith(vault.baseUrl) && request.method === "POST")).toEqual([]);
    await close();
  });

  it("a frame obeys only its own page's window, and elements.js only its frames' windows", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "name", "text");
    await field(page, "name", "value").fill(NAME);
    // The frame tells the page of the typing in a message of its own: counted once it has arrived.
    await expect.poll(async () => (await changes(page, "name")).some((change) => change.empty === false)).toBe(true);
    const before = (await changes(page, "name")).length;
    // Another window of the merchant's own origin (a child frame) tells the element's frame to clear;
    // the page itself forges a change event as if from the frame.
    await page.evaluate(() => {
      const global = globalThis as any;
      const child = global.document.createElement("iframe");
      child.srcdoc = `<script>parent.frames[0].postMessage({ type: "clear" }, "*"); parent.postMessage("child sent", "*");</script>`;
      global.postMessage({ type: "change", change: { complete: true } }, "*");
      return new Promise<void>((resolve) => {
        global.addEventListener("message", (event: any) => event.data === "child sent" && setTimeout(resolve, 500));
        global.document.body.append(child);
      });
    });
    expect(await field(page, "name", "value").inputValue()).toBe(NAME);
    expect((await changes(page, "name")).length).toBe(before);
    await close();
  });

  it("a style's background-image: url(…) and properties outside the allow-list are dropped; allowed ones apply", async () => {
    const { page, requests, close } = await openCheckout();
    const tracker = `${merchant.url}/tracker.png`;
    await mount(page, "name", "text", {
      placeholder: "Your name",
      style: {
        base: {
          color: "rgb(1, 2, 3)",
          fontSize: "18px",
          letterSpacing: "1px",
          backgroundImage: `url(${tracker})`,
          position: "absolute",
          fontFamily: `url(${tracker})`,
          "::placeholder": { color: "rgb(4, 5, 6)", backgroundImage: `url(${tracker})` },
        },
        invalid: { color: "rgb(7, 8, 9)" },
        hacked: { color: "red" },
      },
    });
    const frame = page.frames().find((candidate) => candidate.url().startsWith(`${vault.baseUrl}/elements/v1/frame`))!;
    const computed = (pseudo: string) =>
      frame.evaluate(`(() => {
        const style = getComputedStyle(document.querySelector("input"), ${JSON.stringify(pseudo)});
        return { color: style.color, fontSize: style.fontSize, letterSpacing: style.letterSpacing,
                 backgroundImage: style.backgroundImage, position: style.position, fontFamily: style.fontFamily };
      })()`);
    expect(await computed("")).toEqual({
      color: "rgb(1, 2, 3)",
      fontSize: "18px",
      letterSpacing: "1px",
      backgroundImage: "none",
      position: "static",
      fontFamily: expect.not.stringContaining("url"),
    });
    expect(await computed("::placeholder")).toMatchObject({ color: "rgb(4, 5, 6)", backgroundImage: "none" });
    expect(requests.filter((request) => request.url.startsWith(tracker))).toEqual([]);
    expect(merchant.received.filter((request) => request.includes("tracker"))).toEqual([]);
    await close();
  });
});

describe("elements: the element's methods", () => {
  it("focus, blur, update, clear and unmount act on the frame, with their events", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "card", "card");
    const frame = page.frames().find((candidate) => candidate.url().startsWith(`${vault.baseUrl}/elements/v1/frame`))!;
    const events = () => page.evaluate(() => (globalThis as any).checkout.events.map((entry: any) => entry.event));

    await page.evaluate(() => (globalThis as any).checkout.elements.card.focus());
    await expect.poll(() => frame.evaluate("document.activeElement.name")).toBe("number");
    await page.evaluate(() => (globalThis as any).checkout.elements.card.blur());
    await expect.poll(events).toEqual(["ready", "focus", "blur"]);

    await page.evaluate(() =>
      (globalThis as any).checkout.elements.card.update({ placeholder: "Numéro de carte", style: { base: { color: "rgb(9, 9, 9)" } } }),
    );
    await expect
      .poll(() => frame.evaluate(`[document.querySelector("input").placeholder, getComputedStyle(document.querySelector("input")).color]`))
      .toEqual(["Numéro de carte", "rgb(9, 9, 9)"]);

    await field(page, "card", "number").pressSequentially(VISA);
    await page.evaluate(() => (globalThis as any).checkout.elements.card.clear());
    await expect.poll(() => lastChange(page, "card")).toMatchObject({ empty: true, complete: false });
    expect(await field(page, "card", "number").inputValue()).toBe("");

    await page.evaluate(() => (globalThis as any).checkout.elements.card.unmount());
    expect(await page.evaluate(() => (globalThis as any).document.querySelectorAll("iframe").length)).toBe(0);
    const refused = await send(page, `vault.tokens.create({ type: "card", data: elements.card })`);
    expect(refused).toMatchObject({ ok: false, problem: { status: 400, detail: expect.stringContaining("not mounted") } });
    await close();
  });
  it("a problem keeps its detail through the frame: an element whose frame is gone is named as not answering", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "number", "cardNumber");
    await mount(page, "name", "text");
    // The page takes the name's iframe away behind elements.js's back: the number's frame waits for it in vain.
    await page.evaluate(`document.querySelector("#name iframe").remove()`);
    const answer = await send(page, `vault.tokenize({ number: elements.number, name: elements.name })`);
    expect(answer).toMatchObject({
      ok: false,
      problem: { status: 400, detail: "1 of the request's elements did not answer: mount them and wait for ready" },
    });
    await close();
  });
});

describe("elements: a page on another site", () => {
  let otherSite: Server;
  let otherSiteUrl: string;

  beforeAll(async () => {
    // A third site: the vault is 127.0.0.1, the merchant localhost.
    otherSite = createServer((_, response) => {
      response.setHeader("content-type", "text/html; charset=utf-8");
      response.end("<!doctype html><title>Another site</title>");
    });
    await new Promise<void>((resolve) => otherSite.listen(0, "127.0.0.2", resolve));
    otherSiteUrl = `http://127.0.0.2:${(otherSite.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => otherSite?.close(() => resolve())));

  it("a page on another site, embedding a vault frame on the merchant's channel, gathers nothing of a card typed there", async () => {
    const { page, close } = await openCheckout();
    await mount(page, "card", "card");
    await typeCard(page, "card");
    // The other site knows everything the frame's URL tells: the key, the init's channel and the element's id.
    const merchantFrame = new URL((await page.locator("#card iframe").getAttribute("src"))!);
    const other = await page.context().newPage();
    const sent: string[] = [];
    other.on("request", (request) => {
      if (request.method() === "POST") sent.push(request.url());
    });
    await other.goto(otherSiteUrl);
    const query = new URLSearchParams({
      kind: "text",
      element: "other-site-element",
      key: merchantFrame.searchParams.get("key")!,
      channel: merchantFrame.searchParams.get("channel")!,
      origin: otherSiteUrl,
    });
    const answer: any = await other.evaluate(`new Promise((answered) => {
      const iframe = document.createElement("iframe");
      iframe.src = ${JSON.stringify(`${vault.baseUrl}/elements/v1/frame?${query}`)};
      addEventListener("message", (event) => {
        if (event.source !== iframe.contentWindow) return;
        if (event.data.type === "ready") {
          const references = [{ path: ["stolen"], element: ${JSON.stringify(merchantFrame.searchParams.get("element"))} }];
          iframe.contentWindow.postMessage({ type: "submit", id: 1, operation: "tokenize", body: { stolen: null }, references }, "*");
        } else if (event.data.type === "result") {
          answered(event.data);
        }
      });
      document.body.append(iframe);
    })`);
    // Storage partitioning keys the frame's BroadcastChannel by the top-level site: the merchant's frames never hear it.
    expect(answer).toMatchObject({
      ok: false,
      problem: { detail: "1 of the request's elements did not answer: mount them and wait for ready" },
    });
    expect(sent).toEqual([]);
    await close();
  });
});
