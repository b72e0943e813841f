import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accessibilityViolations,
  type ConsolePage,
  type ConsoleRig,
  openConsole,
  SCREENSHOTS,
  screenshot,
  signIn,
  signOut,
  startConsoleRig,
  visit,
} from "./rig";

/*
 * The console (issue 37) as its users drive it, in Debian's headless Chromium against a vault serving
 * its static assets as production does. The acceptance flows run in order, each building on the one
 * before: every page is checked with axe-core (no WCAG A/AA violation) and screenshotted into
 * .wrangler/console-screenshots/, and no page may send a request to another origin or break its CSP.
 */

const CARD = "4242424242424242";

let rig: ConsoleRig;
let admin: ConsolePage;
let privateKey: string;
let tokenId: string;
let traceOfTry: string;
let proxyId: string;

beforeAll(async () => {
  rig = await startConsoleRig("console-tests-build");
  admin = await openConsole(rig);
});

afterAll(async () => {
  await admin?.close();
  await rig?.close();
});

/** The page has no accessibility violation, is screenshotted, and sent nothing to another origin. */
async function checkPage(page: Page, name: string, { requests, violations }: Pick<ConsolePage, "requests" | "violations">) {
  // What the page shows once its lists have loaded, not their loading states.
  await expect
    .poll(() =>
      page
        .getByRole("status")
        .filter({ hasText: /^(Loading|Verifying)/ })
        .count(),
    )
    .toBe(0);
  await screenshot(page, name);
  expect(await accessibilityViolations(page)).toEqual([]);
  expect(requests.filter((url) => new URL(url).origin !== rig.baseUrl)).toEqual([]);
  expect(violations).toEqual([]);
}

/**
 * How long a test waits for the audit writer to have written an entry: the queue's batch second, a
 * retry 5 s later when a write fails, on a machine other tests load. Not a UI's latency, which the
 * configuration's poll timeout bounds.
 */
const AUDIT_WRITTEN = { timeout: 30_000 };

/** Clicks the Logs page's refresh and waits for that page of the log to arrive, so a click never cancels the load before it. */
async function refreshLog(page: Page) {
  await Promise.all([
    page.waitForResponse((response) => new URL(response.url()).pathname === "/logs"),
    page.getByRole("button", { name: "Refresh the log" }).click(),
  ]);
  // The response's headers arrive before its body is read and rendered: until then the page shows
  // "Loading the log…", and a loaded machine was seen reading that state as an empty log for 30 s.
  await expect.poll(() => page.getByText("Loading the log").count()).toBe(0);
}

/** The 2xx requests the overview's activity counts, once it has loaded. */
async function totalRequests(page: Page): Promise<number> {
  const text = (await page.locator("[data-total-requests]").textContent()) ?? "";
  return Number(/2xx: (\d+)/.exec(text)![1]);
}

describe("the console: served by the vault", () => {
  it("is served at /console/ with a strict policy: its own scripts only, connections to the vault only, never framed", async () => {
    const reply = await fetch(`${rig.baseUrl}/console/`);
    expect(reply.status).toBe(200);
    const policy = reply.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain("unsafe-inline");
    expect(reply.headers.get("x-frame-options")).toBe("DENY");
    expect(reply.headers.get("cache-control")).toBe("no-cache");
    const page = await reply.text();
    expect(page).not.toMatch(/<script>|<style>| style=/);
    // Its script is named by its content, so browsers keep it.
    const script = /src="(\/console\/console\.[^"]+\.js)"/.exec(page)![1];
    expect((await fetch(`${rig.baseUrl}${script}`)).headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
  });

  it("no page of another site can frame it", async () => {
    const context = await rig.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${rig.partnerUrl}/frame`);
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
    // Chromium refuses the framed document: the frame holds its error page, not the console.
    await expect.poll(async () => frame?.url()).not.toBe(`${rig.baseUrl}/console/`);
    expect(await frame?.locator("#console").count()).toBe(0);
    await context.close();
  });

  it("the sign-in page is accessible and asks for a key", async () => {
    await expect.poll(() => admin.page.getByLabel("API key").count()).toBe(1);
    await checkPage(admin.page, "sign-in", admin);
  });
});

describe("the console: acceptance", () => {
  it("signs in with the bootstrap key; the key is in no URL, storage or cookie the page can read", async () => {
    await signIn(admin.page, rig.bootstrapKey);
    expect(await admin.page.locator("[data-identity]").textContent()).toContain("management application");
    expect(admin.requests.join("\n")).not.toContain(rig.bootstrapKey);
    const storage = await admin.page.evaluate(() => {
      const { localStorage, sessionStorage, document } = globalThis as any;
      return JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie;
    });
    expect(storage).not.toContain(rig.bootstrapKey);
    expect(await admin.page.getByLabel("API key").count()).toBe(0);
    await checkPage(admin.page, "overview", admin);
  });

  it("creates a private application with a mask rule, and its key, shown once", async () => {
    const { page } = admin;
    await visit(page, "Applications");
    const form = page.getByRole("form", { name: "Create an application" });
    await form.getByLabel("Name").fill("backend");
    await form.getByLabel("Type", { exact: true }).selectOption("private");
    await form.getByRole("button", { name: "Add a rule" }).click();
    await form.getByLabel("Rule 1 container").fill("/");
    await form.getByLabel("Rule 1 transform").selectOption("mask");
    expect(await form.getByText("masks: only what the token's mask shows", { exact: false }).count()).toBeGreaterThan(0);
    for (const permission of ["token:create", "token:read", "token:search"])
      await form.getByRole("group", { name: "Rule 1 permissions" }).getByLabel(permission).check();
    await checkPage(page, "applications-create", admin);
    await form.getByRole("button", { name: "Create the application" }).click();
    await expect.poll(() => page.locator("[data-secret]").count()).toBe(1);
    privateKey = (await page.locator("[data-secret]").textContent())!;
    expect(privateKey).toMatch(/^key_/);
    await expect.poll(() => page.locator('[data-application="backend"]').count()).toBe(1);
    await page.locator('[data-application="backend"]').getByRole("button", { name: "Keys" }).click();
    await expect.poll(() => page.getByRole("table", { name: "Keys of backend" }).count()).toBe(1);
    await checkPage(page, "applications", admin);
  });

  it("a token created with curl is found by search in the console, masked", async () => {
    const created = await rig.call("POST", "/tokens", privateKey, { type: "card_number", data: CARD, metadata: { order: "42" } });
    expect(created.status).toBe(201);
    tokenId = created.body.id;
    const backend = await openConsole(rig);
    await signIn(backend.page, privateKey);
    await visit(backend.page, "Tokens");
    await backend.page.getByLabel("Query").fill("metadata.order:42");
    await backend.page.getByRole("button", { name: "Search" }).click();
    const row = backend.page.locator(`[data-token-id="${tokenId}"]`);
    await expect.poll(() => row.count()).toBe(1);
    const shown = (await row.locator("[data-token-data]").textContent())!;
    expect(shown).toContain("4242");
    expect(shown).not.toContain(CARD);
    await checkPage(backend.page, "tokens", backend);

    await backend.page.getByLabel("Query").fill("type:nonsense");
    await backend.page.getByRole("button", { name: "Search" }).click();
    await expect.poll(() => backend.page.locator("[data-column]").getAttribute("data-column")).toBe("6");
    await checkPage(backend.page, "tokens-query-error", backend);
    await backend.close();
  });

  it("under a management key the tokens page shows no token data", async () => {
    await visit(admin.page, "Tokens");
    expect(await admin.page.locator("[data-no-token-access]").count()).toBe(1);
    expect(await admin.page.content()).not.toContain(CARD);
  });

  it("creates a proxy with a transform and tries it: status, trace id and duration", async () => {
    const { page } = admin;
    await visit(page, "Proxies");
    await page.getByRole("button", { name: "Create a proxy" }).click();
    const form = page.getByRole("form", { name: "Create a proxy" });
    await form.getByLabel("Name").fill("echo");
    await form.getByLabel("Destination URL").fill(`${rig.partnerUrl}/charge`);
    await form.getByLabel("Callers need an API key with token:use").uncheck();
    const editor = form.getByRole("textbox", { name: "Request transform" });
    await expect.poll(() => editor.count()).toBe(1);
    await editor.fill(
      "module.exports = async function (req) {\n  return { headers: req.args.headers, body: { ...req.args.body, transformed: true } };\n};",
    );
    await checkPage(page, "proxies-create", admin);
    await form.getByRole("button", { name: "Create the proxy" }).click();
    const card = page.locator('[data-proxy="echo"]');
    await expect.poll(() => card.count()).toBe(1);
    await card.getByRole("textbox", { name: /Body/ }).fill('{"amount": 100}');
    await card.getByRole("button", { name: "Send the sample request" }).click();
    await expect.poll(() => card.locator("[data-status]").textContent()).toBe("200");
    traceOfTry = (await card.locator("[data-trace-id]").textContent())!;
    proxyId = (await card.locator("[data-proxy-id]").textContent())!;
    expect(traceOfTry).toMatch(/^[0-9a-f-]{36}$/);
    expect(await card.locator("[data-try-result]").textContent()).toMatch(/\d+ ms/);
    // The partner received the body as the request transform made it.
    expect(await card.locator("[data-try-result] pre").textContent()).toContain('{\\"amount\\":100,\\"transformed\\":true}');
    await checkPage(page, "proxies", admin);
  });

  it("the call is in Logs with its trace id, and the chain's status says what was checked", async () => {
    const { page } = admin;
    await visit(page, "Logs");
    // The log's own reads are logged too: the proxy's entries are found by its id.
    await page.getByLabel("Entity id").fill(proxyId);
    await page.getByLabel("Entity id").press("Tab");
    await expect
      .poll(async () => {
        await refreshLog(page);
        return page.locator(`[data-trace-id="${traceOfTry}"]`).count();
      }, AUDIT_WRITTEN)
      .toBeGreaterThan(0);
    await page.getByRole("button", { name: "Verify again" }).click();
    await expect.poll(() => page.locator("[data-chain]").getAttribute("data-chain")).toBe("verified");
    expect(await page.locator("[data-chain]").textContent()).toMatch(/Chain verified: \d+ entries checked/);
    await checkPage(page, "logs", admin);
  }, 60_000);

  it("Logs filters by actor and operation in the vault, and pages by cursor", async () => {
    const { page } = admin;
    const identity = await rig.call("GET", "/applications/key", rig.bootstrapKey);
    const traces: string[] = [];
    for (let i = 0; i < 3; i++) traces.push((await rig.call("GET", "/applications/key", rig.bootstrapKey)).traceId!);
    await visit(page, "Logs");
    await page.getByLabel("Entity id").fill("");
    // The actor's page answers only once the operation is typed: its render must not set the typed
    // operation back to the applied one (it did, and a loaded machine lost the operation filter so).
    const actorOnly = (url: URL) => url.pathname === "/logs" && url.searchParams.has("actor_id") && !url.searchParams.has("operation");
    let release!: () => void;
    const typed = new Promise<void>((resolve) => (release = resolve));
    await page.route(actorOnly, async (route) => {
      await typed;
      await route.continue();
    });
    await page.getByLabel("Actor id").fill(identity.body.id);
    const actorAnswered = page.waitForResponse((response) => actorOnly(new URL(response.url())));
    await page.getByLabel("Actor id").press("Tab");
    await page.getByLabel("Operation").fill("read");
    release();
    await actorAnswered;
    await expect.poll(() => page.getByText("Loading the log").count()).toBe(0);
    await page.unroute(actorOnly);
    await page.getByLabel("Operation").press("Tab");
    // Every row is the filter's, whatever else the log holds (the console's own list and verify calls),
    // and the three reads are among them once the audit writer has written them.
    const shown = async () => ({
      operations: [...new Set(await page.locator("tbody tr td:nth-child(3)").allTextContents())],
      traces: (await Promise.all(traces.map((trace) => page.locator(`[data-trace-id="${trace}"]`).count()))).filter(Boolean).length,
    });
    await expect
      .poll(async () => {
        await refreshLog(page);
        return shown();
      }, AUDIT_WRITTEN)
      .toEqual({ operations: ["read"], traces: 3 });
    // Pages of 20 by cursor: with the filter cleared the log holds more than a page.
    await page.getByLabel("Actor id").fill("");
    await page.getByLabel("Operation").fill("");
    await page.getByLabel("Operation").press("Tab");
    await expect.poll(() => page.locator("[data-log-page]").textContent()).toMatch(/^Page 1 of \d+/);
    const newest = await page.locator("[data-trace-id]").first().getAttribute("data-trace-id");
    await page.getByRole("button", { name: "Older" }).click();
    await expect.poll(() => page.locator("[data-log-page]").textContent()).toBe("Page 2");
    expect(await page.locator(`[data-trace-id="${newest}"]`).count()).toBe(0);
    await checkPage(page, "logs-filtered", admin);
    await page.getByRole("button", { name: "Newer" }).click();
    await expect.poll(() => page.locator("[data-log-page]").textContent()).toMatch(/^Page 1 of/);
  }, 60_000);

  it("the overview chart moves after a burst of calls", async () => {
    const { page } = admin;
    await visit(page, "Overview");
    const before = await totalRequests(page);
    const burst: string[] = [];
    for (let i = 0; i < 20; i++) {
      const reply = await rig.call("GET", "/applications", rig.bootstrapKey);
      expect(reply.status).toBe(200);
      burst.push(reply.traceId!);
    }
    // The overview counts what the log holds (its rollup is written in the batch that writes the entries):
    // once Logs shows the burst's 20 entries, the overview must count them.
    await visit(page, "Logs");
    await page.getByLabel("Entity type").selectOption("application");
    await page.getByLabel("Operation").fill("list");
    await page.getByLabel("Operation").press("Tab");
    const written = () => Promise.all(burst.map((trace) => page.locator(`[data-trace-id="${trace}"]`).count()));
    await expect
      .poll(async () => {
        await refreshLog(page);
        return (await written()).filter((count) => count > 0).length;
      }, AUDIT_WRITTEN)
      .toBe(20);
    await visit(page, "Overview");
    expect(await totalRequests(page)).toBeGreaterThanOrEqual(before + 20);
    // uPlot draws its canvas in an effect, after the counts are on the page.
    await expect.poll(() => page.locator(".chart canvas").count()).toBeGreaterThan(0);
    await checkPage(page, "overview-after-burst", admin);
  }, 60_000);

  for (const [title, name] of [
    ["Reactors", "reactors"],
    ["Webhooks", "webhooks"],
    ["Keys", "keys"],
  ] as const) {
    it(`the ${name} page is accessible and sends nothing elsewhere`, async () => {
      await visit(admin.page, title);
      await checkPage(admin.page, name, admin);
    });
  }

  it("the webhooks page shows an endpoint's recent deliveries, with their status and attempts", async () => {
    const created = await rig.call("POST", "/webhooks", rig.bootstrapKey, {
      name: "orders",
      url: `${rig.partnerUrl}/hooks`,
      events: ["token.created"],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await rig.call("POST", "/tokens", privateKey, { type: "token", data: "hooked" })).status).toBe(201);
    const { page } = admin;
    await visit(page, "Webhooks");
    await page.getByRole("button", { name: "Deliveries of orders" }).click();
    const section = page.getByRole("region", { name: "Deliveries of orders" });
    // The event is raised once the audit log holds the token, then delivered from the queue.
    await expect
      .poll(async () => {
        await section.getByRole("button", { name: "Refresh the deliveries" }).click();
        return section.locator("tr", { hasText: "token.created" }).filter({ hasText: "delivered" }).count();
      }, AUDIT_WRITTEN)
      .toBe(1);
    await checkPage(page, "webhooks-deliveries", admin);
  });

  it("creates a reactor with its code in the editor; its try panel shows the vault's answer", async () => {
    const { page } = admin;
    await visit(page, "Reactors");
    await page.getByRole("button", { name: "Create a reactor" }).click();
    const form = page.getByRole("form", { name: "Create a reactor" });
    await form.getByLabel("Name").fill("echo-args");
    await expect.poll(() => form.getByRole("textbox", { name: "Reactor code" }).count()).toBe(1);
    await checkPage(page, "reactors-create", admin);
    await form.getByRole("button", { name: "Create the reactor" }).click();
    const card = page.locator('[data-reactor="echo-args"]');
    await expect.poll(() => card.count()).toBe(1);
    await card.getByRole("button", { name: "React" }).click();
    // React needs token:use, which a management key never holds: the vault's 403 is shown, with its trace id.
    await expect.poll(() => card.locator("[data-status]").textContent()).toBe("403");
    expect(await card.locator("[data-trace-id]").textContent()).toMatch(/^[0-9a-f-]{36}$/);
    await checkPage(page, "reactors", admin);
  });

  it("a new user sets up a proxy that detokenizes a card, using only the console", async () => {
    const { page } = admin;
    const VISA = "4111111111111111";
    await visit(page, "Applications");
    const form = page.getByRole("form", { name: "Create an application" });
    await form.getByLabel("Name").fill("detokenizer");
    await form.getByLabel("Type", { exact: true }).selectOption("private");
    for (const permission of ["token:create", "token:use"])
      await form.getByRole("checkbox", { name: new RegExp(`^${permission} `) }).check();
    await form.getByRole("button", { name: "Create the application" }).click();
    await expect.poll(() => page.locator('[data-application="detokenizer"]').count()).toBe(1);
    const detokenizerKey = (await page.locator("[data-secret]").textContent())!;

    await signOut(page);
    await signIn(page, detokenizerKey);
    await visit(page, "Tokens");
    const create = page.getByRole("form", { name: "Create a token" });
    await create.getByLabel("Token type").selectOption("card_number");
    await create.getByLabel("Data").fill(VISA);
    await create.getByRole("button", { name: "Create the token" }).click();
    await expect.poll(() => page.locator("[data-created-token]").count()).toBe(1);
    const id = (await page.locator("[data-created-token]").textContent())!;
    expect(await page.content()).not.toContain(VISA);
    await checkPage(page, "tokens-create", admin);

    await signOut(page);
    await signIn(page, rig.bootstrapKey);
    await visit(page, "Proxies");
    await page.getByRole("button", { name: "Create a proxy" }).click();
    const proxy = page.getByRole("form", { name: "Create a proxy" });
    await proxy.getByLabel("Name").fill("charge");
    await proxy.getByLabel("Destination URL").fill(`${rig.partnerUrl}/charge`);
    await proxy.getByLabel("Callers need an API key with token:use").uncheck();
    await proxy.getByLabel("Application", { exact: true }).selectOption({ label: "detokenizer (private)" });
    await proxy.getByRole("button", { name: "Create the proxy" }).click();
    const card = page.locator('[data-proxy="charge"]');
    await expect.poll(() => card.count()).toBe(1);
    await card.getByRole("textbox", { name: /Body/ }).fill(`{"card": "{{ ${id} }}"}`);
    await card.getByRole("button", { name: "Send the sample request" }).click();
    await expect.poll(() => card.locator("[data-status]").textContent()).toBe("200");
    // The partner received the card's number, detokenized by the vault.
    expect(await card.locator("[data-try-result] pre").textContent()).toContain(VISA);
  }, 90_000);

  it("revoking the key in the console asks first, naming the key, and ends the session signed in with it", async () => {
    const backend = await openConsole(rig);
    await signIn(backend.page, privateKey);
    const { page } = admin;
    await visit(page, "Applications");
    const application = page.locator('[data-application="backend"]');
    await application.getByRole("button", { name: "Keys" }).click();
    const keys = page.getByRole("table", { name: "Keys of backend" });
    await expect.poll(() => keys.getByRole("button", { name: /^Revoke key / }).count()).toBe(1);
    const revoke = keys.getByRole("button", { name: /^Revoke key / });
    const keyId = (await revoke.textContent())!.replace("Revoke key ", "");
    await revoke.click();
    const dialog = page.getByRole("dialog", { name: `Revoke key ${keyId}?` });
    expect(await dialog.textContent()).toContain(`The key ${keyId} of backend stops working at once`);
    await checkPage(page, "applications-revoke-dialog", admin);
    await dialog.getByRole("button", { name: "Revoke the key" }).click();
    await expect.poll(() => keys.getByText(keyId).count()).toBe(0);

    await visit(backend.page, "Tokens");
    await backend.page.getByRole("button", { name: "Search" }).click();
    await expect.poll(() => backend.page.locator("[data-session-ended]").count()).toBe(1);
    await checkPage(backend.page, "session-ended", backend);
    await backend.close();
  });

  it("signs out", async () => {
    await signOut(admin.page);
    expect((await admin.context.cookies()).filter((cookie) => cookie.name === "svc_console")).toEqual([]);
    expect(SCREENSHOTS).toContain("console-screenshots");
  });
});
