import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rig, startRig } from "./rig";

/*
 * A public key's allowed_origins in Chromium (issue 27, step 4): the frame page of such a key carries
 * frame-ancestors with those origins, so the browser shows it in no other page, and the vault refuses
 * the key's requests from any other page's origin.
 */

const VISA = "4242424242424242";
const EXPIRATION = `12${String(new Date().getFullYear() + 3).slice(2)}`;
const CARD = { type: "card", data: { number: VISA, expiration_month: 12, expiration_year: new Date().getFullYear() + 3 } };

let rig: Rig;
let vault: Rig["vault"];
let merchant: Rig["merchant"];
let browser: Browser;
let management: string;

function post(path: string, headers: Record<string, string>, body: unknown) {
  return rig.call("POST", path, headers, body);
}

async function publicKeyAllowing(origins: string[]): Promise<string> {
  const created = await post(
    "/applications",
    { "SVC-API-KEY": management },
    { name: "checkout", type: "public", permissions: ["token:create"], allowed_origins: origins },
  );
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.key;
}

beforeAll(async () => {
  rig = await startRig("elements-origins-tests-build");
  ({ vault, merchant, browser } = rig);
  const tenant = await post("/tenants", { "SVC-OPERATOR-KEY": vault.operatorKey }, { name: "origins" });
  management = tenant.body.application.key;
});

afterAll(() => rig?.close());

async function openCheckout(key: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(merchant.url);
  await page.evaluate((publicKey) => (globalThis as any).checkout.init(publicKey), key);
  return { page, close: () => context.close() };
}

/** Mounts an element as the merchant's checkout does: what mount resolved to, or the problem it rejected with. */
function mount(page: Page, name: string, kind: string): Promise<{ ok: boolean; problem?: any }> {
  return page.evaluate(([name, kind]) => (globalThis as any).checkout.settle((globalThis as any).checkout.mount(name, kind, {})), [
    name,
    kind,
  ] as const);
}

describe("elements: a public key's allowed_origins", () => {
  it("lists another origin: the frames do not render in the merchant's page, mount rejects, and nothing is tokenized", async () => {
    const key = await publicKeyAllowing(["https://shop.example.com"]);
    const { page, close } = await openCheckout(key);
    const mounted = await mount(page, "card", "card");
    expect(mounted).toMatchObject({ ok: false, problem: { status: 503, title: "Service Unavailable" } });
    expect(mounted.problem.detail).toContain("allowed_origins");
    // The element took its iframe away, and no frame of the vault shows an input.
    expect(await page.locator("#card iframe").count()).toBe(0);
    for (const frame of page.frames().slice(1)) expect(await frame.locator("input").count()).toBe(0);

    const sent = await page.evaluate(`checkout.settle(checkout.vault.tokens.create({ type: "card", data: checkout.elements.card }))`);
    expect(sent).toMatchObject({ ok: false, problem: { status: 400 } });
    // The key itself, sent from the merchant's page without the elements, is refused too.
    const direct = await post("/tokens", { "SVC-API-KEY": key, origin: merchant.url }, CARD);
    expect(direct.status).toBe(403);
    await close();
  });

  it("a page that claims an allowed origin in the frame's URL is still not shown the frame: the browser holds frame-ancestors", async () => {
    const key = await publicKeyAllowing(["https://shop.example.com"]);
    const { page, close } = await openCheckout(key);
    const query = new URLSearchParams({ kind: "card", element: "e1", key, channel: "c1", origin: "https://shop.example.com" });
    const frameAnswer = page.waitForResponse((response) => response.url().startsWith(`${vault.baseUrl}/elements/v1/frame?`));
    await page.evaluate(`new Promise((loaded) => {
      const iframe = document.createElement("iframe");
      iframe.src = ${JSON.stringify(`${vault.baseUrl}/elements/v1/frame?${query}`)};
      iframe.addEventListener("load", loaded, { once: true });
      document.body.append(iframe);
    })`);
    // The vault served the page, with a policy that names the shop only.
    expect((await frameAnswer).status()).toBe(200);
    const framed = page.frames().find((frame) => frame.url().startsWith(vault.baseUrl));
    expect(framed ? await framed.locator("input").count() : 0).toBe(0);
    await close();
  });

  it("lists the merchant's origin: the card is typed into the frames and becomes a token, as without the list", async () => {
    const key = await publicKeyAllowing(["https://shop.example.com", merchant.url]);
    const { page, close } = await openCheckout(key);
    const frameAnswer = page.waitForResponse((response) => response.url().startsWith(`${vault.baseUrl}/elements/v1/frame?`));
    expect(await mount(page, "card", "card")).toEqual({ ok: true, body: undefined });
    expect((await frameAnswer).headers()["content-security-policy"]).toContain(
      `frame-ancestors 'self' https://shop.example.com ${merchant.url}`,
    );
    const frame = page.frameLocator("#card iframe");
    await frame.locator('input[name="number"]').pressSequentially(VISA);
    await frame.locator('input[name="expiration"]').pressSequentially(EXPIRATION);
    await frame.locator('input[name="cvc"]').pressSequentially("123");
    await expect.poll(() => page.evaluate(`checkout.lastChange("card")?.complete`)).toBe(true);
    const created: any = await page.evaluate(
      `checkout.settle(checkout.vault.tokens.create({ type: "card", data: checkout.elements.card }))`,
    );
    expect(created).toMatchObject({ ok: true, body: { type: "card", id: expect.any(String) } });
    expect(JSON.stringify(created.body)).not.toContain(VISA);
    await close();
  });
});
