import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The API reference page in a real headless Chromium (Debian's, at CHROMIUM_PATH or
 * /usr/bin/chromium; `.ci/run` installs it), against a vault serving its static assets as
 * production does. Every request the page makes must stay on the vault: any other is refused and
 * fails the test, so the page works with no network.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SCREENSHOT = join(process.cwd(), ".wrangler", "docs-page.png");

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let browser: Browser;
let managementKey: string;

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "node-tests-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, assets: true });
  const reply = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "SVC-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "docs page" }),
  });
  managementKey = ((await reply.json()) as { application: { key: string } }).application.key;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});

afterAll(async () => {
  await browser?.close();
  await vault?.dispose();
});

describe("GET /docs in Chromium", () => {
  it("renders the guide, every tag and operation from the vault alone, and tries a request with a pasted key", {
    timeout: 60_000,
  }, async () => {
    const document = (await (await fetch(`${vault.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { tags?: string[]; summary?: string }>>;
    };
    const tags = [...new Set(Object.values(document.paths).flatMap((item) => Object.values(item).flatMap((op) => op.tags ?? [])))];
    expect(tags.length).toBeGreaterThan(5);

    const page = await browser.newPage();
    const elsewhere: string[] = [];
    const origin = new URL(vault.baseUrl).origin;
    await page.route("**/*", (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });
    const refusedByPolicy: string[] = [];
    page.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) refusedByPolicy.push(message.text());
    });
    const answer = await page.goto(`${vault.baseUrl}/docs`);
    const policy = (await answer!.allHeaders())["content-security-policy"] ?? "";
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("script-src 'self';");
    await page.locator(".opblock-tag").first().waitFor();

    // Every tag of the document is a section of the page; each section lists its operations.
    const shownTags = await page.locator(".opblock-tag").evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-tag")));
    expect(new Set(shownTags)).toEqual(new Set(tags));
    for (const tag of tags) expect((await page.locator(`.opblock-tag[data-tag="${tag}"] small`).innerText()).trim(), tag).not.toBe("");

    // The document's guide sits above the operations, with the headers under this deployment's prefix.
    const guide = page.locator(".information-container .info .description");
    for (const heading of ["Authenticate", "Errors", "Where to start"]) await expect.poll(() => guide.innerText()).toContain(heading);
    expect(await guide.innerText()).toContain("SVC-API-KEY");
    const guideBox = (await guide.boundingBox())!;
    const firstTagBox = (await page.locator(".opblock-tag").first().boundingBox())!;
    expect(guideBox.y + guideBox.height).toBeLessThanOrEqual(firstTagBox.y);
    for (const tag of ["Tokens", "Proxies", "Operators"].filter((name) => tags.includes(name))) {
      await page.locator(`.opblock-tag[data-tag="${tag}"]`).click();
    }
    for (const path of ["/tokens", "/tokens/search", "/proxies", "/tenants/{id}/rotation"]) {
      await expect.poll(() => page.locator(`.opblock-summary-path[data-path="${path}"]`).count(), { message: path }).toBeGreaterThan(0);
    }

    // Try it: paste a key under Authorize, then run GET /permissions from the page.
    await page.locator(".btn.authorize").first().click();
    const apiKeyForm = page.locator(".auth-container").filter({ hasText: "SVC-API-KEY" });
    await apiKeyForm.locator("input").fill(managementKey);
    await apiKeyForm.locator("button.authorize").click();
    await page.locator(".btn-done, button.close-modal").first().click();
    const tag = await page.locator(`.opblock-summary-path[data-path="/permissions"]`).count();
    if (tag === 0) {
      const permissionsTag = document.paths["/permissions"]?.get?.tags?.[0];
      if (permissionsTag) await page.locator(`.opblock-tag[data-tag="${permissionsTag}"]`).click();
    }
    const operation = page.locator(".opblock").filter({ has: page.locator(`.opblock-summary-path[data-path="/permissions"]`) });
    await operation.locator(".opblock-summary").click();
    const tryItOut = operation.locator("button.try-out__btn");
    if ((await tryItOut.count()) > 0 && (await tryItOut.innerText()).includes("Try it out")) await tryItOut.click();
    await operation.locator("button.execute").click();
    const status = operation.locator(".live-responses-table tr.response .response-col_status").first();
    await expect.poll(() => status.innerText(), { timeout: 15_000 }).toBe("200");
    await expect.poll(() => operation.locator(".live-responses-table .microlight").first().innerText()).toContain("token:create");

    await page.screenshot({ path: SCREENSHOT, fullPage: false });
    expect(elsewhere).toEqual([]);
    // The page works within its policy, and the pasted key stays out of the origin's storage.
    expect(refusedByPolicy).toEqual([]);
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }));
    expect(stored).not.toContain(managementKey);
  });
});
