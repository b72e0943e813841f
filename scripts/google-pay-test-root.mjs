// A local stand-in for Google's root signing key, so a vault started with `npm start` can be tried with
// Google Pay tokens without the internet: scripts/start.mjs makes the pair once (kept in .wrangler/,
// git-ignored) and trusts its public half in .dev.vars only; scripts/google-pay-test-token.mjs signs
// tokens with it. A deployed vault never holds it: .dev.vars is not deployed (docs/operations.md).
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const testRootPath = join(root, ".wrangler", "google-pay-test-root.json");

/** The comment .dev.vars carries above the line start.mjs manages; a line without it is the operator's own. */
export const DEV_VARS_MARKER =
  "# Google Pay: trusts only the local test root of .wrangler/google-pay-test-root.json (npm start; never deployed).";

/** How long a local test root is trusted: Google's own roots carry an expiry, which the vault requires. */
const LIFETIME_MS = 5 * 365 * 24 * 60 * 60 * 1000;

/**
 * The local test root ({privateKey: PKCS #8 base64, publicKey: X.509 base64, keyExpiration: ms}),
 * made on first use and made anew once expired.
 */
export function localTestRoot() {
  if (existsSync(testRootPath)) {
    const pair = JSON.parse(readFileSync(testRootPath, "utf8"));
    if (Number(pair.keyExpiration) > Date.now()) return pair;
  }
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const pair = {
    privateKey: privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
    publicKey: publicKey.export({ format: "der", type: "spki" }).toString("base64"),
    keyExpiration: String(Date.now() + LIFETIME_MS),
  };
  mkdirSync(dirname(testRootPath), { recursive: true });
  writeFileSync(testRootPath, `${JSON.stringify(pair, null, 2)}\n`, { mode: 0o600 });
  return pair;
}

/** GOOGLE_PAY_ROOT_SIGNING_KEYS trusting the local test root, in Google's published format. */
export function rootSigningKeysOf(pair) {
  return JSON.stringify({ keys: [{ keyValue: pair.publicKey, protocolVersion: "ECv2", keyExpiration: pair.keyExpiration }] });
}

/**
 * .dev.vars with its Google Pay line trusting the local test root: added when absent, replaced when it
 * is the one this script wrote (the test root was made anew), left alone when the operator set their own.
 * Answers the new text, or null when the file's line is the operator's.
 */
export function devVarsTrustingTestRoot(devVars, pair) {
  const line = `GOOGLE_PAY_ROOT_SIGNING_KEYS='${rootSigningKeysOf(pair)}'`;
  const lines = devVars.split("\n");
  const at = lines.findIndex((candidate) => candidate.startsWith("GOOGLE_PAY_ROOT_SIGNING_KEYS="));
  if (at === -1) return `${devVars.replace(/\n*$/, "\n")}${DEV_VARS_MARKER}\n${line}\n`;
  if (lines[at - 1] !== DEV_VARS_MARKER) return null;
  lines[at] = line;
  return lines.join("\n");
}
