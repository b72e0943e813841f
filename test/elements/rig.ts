import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";
import { type AuthorizeSession, startMerchant } from "./merchant/server";

/*
 * What every browser elements test runs against: a vault serving its static assets as production
 * does, the merchant's site on a second loopback origin (./merchant/server.ts), and Debian's headless
 * Chromium (CHROMIUM_PATH or /usr/bin/chromium) with third-party storage partitioning on, as shoppers' browsers have it.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * The features Playwright turns off in every Chromium it launches (playwright-core 1.65,
 * src/server/chromium/chromiumSwitches.ts). Among them is third-party storage partitioning, which
 * browsers people use have on, and which keeps a vault frame in another site's page off the
 * merchant's frames' channel: the rig launches with the list without it. Should Playwright's list
 * change, its switch stays in beside this one; checkout.test.ts "a page on another site … gathers
 * nothing" fails if partitioning is off.
 */
const PLAYWRIGHT_DISABLED_FEATURES = [
  "AvoidUnnecessaryBeforeUnloadCheckSync",
  "DestroyProfileOnBrowserClose",
  "HttpsUpgrades",
  "HttpsFirstBalancedModeAutoEnable",
  "LensOverlay",
  "MediaRouter",
  "PaintHolding",
  "ThirdPartyStoragePartitioning",
  "AvoidCorsURLLoaderRestartOnRedirect",
  "TcpPortRandomizationWin",
  "OptimizationHints",
  "NetworkTimeServiceQuerying",
  "AimEnabled",
  "PreconnectToSearch",
  "msForceBrowserSignIn",
  "msEdgeUpdateLaunchServicesPreferredVersion",
];
const disableFeatures = (features: string[]) => `--disable-features=${features.join(",")}`;

export interface Rig {
  vault: Awaited<ReturnType<typeof startLocalVault>>;
  merchant: Awaited<ReturnType<typeof startMerchant>>;
  browser: Browser;
  /** A call of the vault's API: its status and JSON body (null when empty). */
  call(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/** The vault built into `.wrangler/<buildName>`, the merchant (whose server authorizes sessions with `authorizeSession`) and the browser. */
export async function startRig(buildName: string, authorizeSession?: AuthorizeSession): Promise<Rig> {
  const buildDir = join(process.cwd(), ".wrangler", buildName);
  buildWorker(buildDir);
  const vault = await startLocalVault({ buildDir, assets: true });
  let merchant: Rig["merchant"] | undefined;
  let browser: Browser;
  try {
    merchant = await startMerchant(vault.baseUrl, authorizeSession);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      ignoreDefaultArgs: [disableFeatures(PLAYWRIGHT_DISABLED_FEATURES)],
      args: [
        "--no-sandbox",
        disableFeatures(PLAYWRIGHT_DISABLED_FEATURES.filter((feature) => feature !== "ThirdPartyStoragePartitioning")),
      ],
    });
  } catch (error) {
    // What started is stopped, so a failed start leaves nothing running behind the failing tests.
    await merchant?.close();
    await vault.dispose();
    throw error;
  }
  return {
    vault,
    merchant,
    browser,
    async call(method, path, headers, body) {
      const reply = await fetch(`${vault.baseUrl}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await reply.text();
      return { status: reply.status, body: text ? JSON.parse(text) : null };
    },
    async close() {
      await browser.close();
      await merchant.close();
      await vault.dispose();
    },
  };
}
