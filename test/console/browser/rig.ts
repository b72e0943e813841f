import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { buildWorker, startLocalVault } from "../../../scripts/local-vault.mjs";

/*
 * What the console's browser tests run against: the vault serving its static assets as production
 * does, with a bootstrap key; a partner's server on another loopback origin (localhost; the vault is
 * 127.0.0.1) that echoes what a proxy forwards it and serves a page that tries to frame the console;
 * and Debian's headless Chromium (CHROMIUM_PATH or /usr/bin/chromium).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Where every page's screenshot goes (git-ignored). */
export const SCREENSHOTS = join(process.cwd(), ".wrangler", "console-screenshots");
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface ConsoleRig {
  baseUrl: string;
  bootstrapKey: string;
  /** The partner's echo server, on another origin. */
  partnerUrl: string;
  browser: Browser;
  /** A call of the vault's API with a key, as curl would send it: status, JSON body, trace id. */
  call(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: any; traceId: string | null }>;
  close(): Promise<void>;
}

export async function startConsoleRig(buildName: string): Promise<ConsoleRig> {
  const buildDir = join(process.cwd(), ".wrangler", buildName);
  buildWorker(buildDir);
  const bootstrapKey = `key_${randomBytes(32).toString("base64url")}`;
  const vault = await startLocalVault({ buildDir, assets: true, bindings: { BOOTSTRAP_API_KEY: bootstrapKey } });
  let partner: Server | undefined;
  let browser: Browser;
  try {
    partner = await startPartner(vault.baseUrl);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  } catch (error) {
    partner?.close();
    await vault.dispose();
    throw error;
  }
  const partnerUrl = `http://localhost:${(partner.address() as AddressInfo).port}`;
  return {
    baseUrl: vault.baseUrl,
    bootstrapKey,
    partnerUrl,
    browser,
    async call(method, path, key, body) {
      const reply = await fetch(`${vault.baseUrl}${path}`, {
        method,
        headers: { "SVC-API-KEY": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await reply.text();
      return { status: reply.status, body: text ? JSON.parse(text) : null, traceId: reply.headers.get("svc-trace-id") };
    },
    async close() {
      await browser.close();
      await new Promise((resolve) => partner!.close(resolve));
      await vault.dispose();
    },
  };
}

/** The partner: echoes every request as JSON, and at /frame serves a page that frames the console. */
function startPartner(vaultUrl: string): Promise<Server> {
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      if (request.url === "/frame") {
        response.writeHead(200, { "content-type": "text/html" });
        response.end(`<!doctype html><title>framing</title><iframe title="console" src="${vaultUrl}/console/"></iframe>`);
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ echoed: { method: request.method, path: request.url, body } }));
    });
  });
  return new Promise((resolve) => server.listen(0, "localhost", () => resolve(server)));
}

export interface ConsolePage {
  page: Page;
  context: BrowserContext;
  /** Every request the page sent, by URL. */
  requests: string[];
  /** The Content-Security-Policy violations the page reported. */
  violations: string[];
  close(): Promise<void>;
}

/** The console in a fresh browser context (no cookie), every request and CSP violation recorded. */
export async function openConsole(rig: ConsoleRig): Promise<ConsolePage> {
  const context = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const requests: string[] = [];
  const violations: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  await page.goto(`${rig.baseUrl}/console/`);
  return { page, context, requests, violations, close: () => context.close() };
}

export async function signIn(page: Page, key: string) {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  // The identity once signed in, or the problem the page shows.
  await expect.poll(() => page.locator("[data-identity], [role=alert]").first().textContent()).toContain("Signed in as");
}

export async function signOut(page: Page) {
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect.poll(() => page.getByLabel("API key").count()).toBe(1);
}

/** Opens a page of the console from its navigation. */
export async function visit(page: Page, title: string) {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: title, exact: true }).click();
  await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe(title);
}

/** axe-core's violations of WCAG 2.0/2.1 level A and AA on the page as it is, one line each. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const results = await (globalThis as any).axe.run((globalThis as any).document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
    });
    return results.violations.map(
      (violation: any) => `${violation.id}: ${violation.help} (${violation.nodes.map((node: any) => node.target.join(" ")).join(", ")})`,
    );
  });
}

export async function screenshot(page: Page, name: string) {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
