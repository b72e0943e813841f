import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_VARS_MARKER, devVarsTrustingTestRoot, localTestRoot, rootSigningKeysOf } from "../../scripts/google-pay-test-root.mjs";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * `npm start`'s local Google Pay test root (docs/wallets.md): tokens `npm run google-pay:test-token`
 * mints verify only in a vault told to trust that root, which only `npm start`'s .dev.vars does. A
 * vault as deployed (wrangler.toml, no GOOGLE_PAY_ROOT_SIGNING_KEYS) refuses them, and an operator's
 * own root line in .dev.vars is never replaced by the test root.
 */

type Vault = Awaited<ReturnType<typeof startLocalVault>>;

const MERCHANT = "local-test-merchant";
const buildDir = join(process.cwd(), ".wrangler", "node-tests-build");
let trusting: Vault;
let deployed: Vault;
let merchantKeyFile: string;
/** Where the trusting vault keeps its D1 databases and R2 bucket on disk, as `npm start` does under .wrangler/state. */
let stateDir: string;

/** Every file under `dir`, read whole. */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [{ path, bytes: readFileSync(path) }];
  });
}

function script(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [join("scripts", "google-pay-test-token.mjs"), ...args], (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim()),
    ),
  );
}

async function send(vault: Vault, path: string, headers: Record<string, string>, body: unknown) {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

/** A tenant of the vault with the merchant and its key registered: a key that may decrypt Google Pay tokens. */
async function decryptingKey(vault: Vault, permissions: string[] = []): Promise<string> {
  const tenant = await send(vault, "/tenants", { "SVC-OPERATOR-KEY": vault.operatorKey }, { name: "gpay" });
  const management = { "SVC-API-KEY": tenant.body.application.key };
  const merchant = await send(vault, "/google-pay/merchant-registration", management, { merchant_identifier: MERCHANT });
  expect(merchant.status, JSON.stringify(merchant.body)).toBe(201);
  const certificate = await send(vault, `/google-pay/merchant-registration/${merchant.body.id}/certificates`, management, {
    merchant_certificate_data: readFileSync(merchantKeyFile, "utf8").trim(),
  });
  expect(certificate.status, JSON.stringify(certificate.body)).toBe(201);
  const application = await send(vault, "/applications", management, {
    name: "checkout server",
    type: "private",
    permissions: ["google-pay:create", "token-intent:read", ...permissions],
  });
  return application.body.key;
}

beforeAll(async () => {
  buildWorker(buildDir);
  // The root `npm start` makes in .wrangler/ (made here if this checkout has none yet).
  const root = localTestRoot();
  stateDir = mkdtempSync(join(tmpdir(), "gpay-state-"));
  trusting = await startLocalVault({
    buildDir,
    bindings: { GOOGLE_PAY_ROOT_SIGNING_KEYS: rootSigningKeysOf(root) },
    persistTo: stateDir,
  });
  deployed = await startLocalVault({ buildDir });
  merchantKeyFile = join(mkdtempSync(join(tmpdir(), "gpay-")), "merchant-key.txt");
  writeFileSync(merchantKeyFile, await script(["--new-merchant-key"]));
});

afterAll(async () => {
  await trusting?.dispose();
  await deployed?.dispose();
  for (const dir of [stateDir, merchantKeyFile && dirname(merchantKeyFile)]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the local Google Pay test root", () => {
  it("a token minted by npm run google-pay:test-token is decrypted by a vault trusting the test root, and refused by one as deployed", async () => {
    const token = JSON.parse(await script(["--merchant-id", MERCHANT, "--merchant-key", merchantKeyFile]));
    const accepted = await send(trusting, "/google-pay", { "SVC-API-KEY": await decryptingKey(trusting) }, { google_payment_data: token });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.token_intent).toMatchObject({ type: "card" });

    const refused = await send(deployed, "/google-pay", { "SVC-API-KEY": await decryptingKey(deployed) }, { google_payment_data: token });
    expect(refused.status).toBe(400);
    // Deployed without GOOGLE_PAY_ROOT_SIGNING_KEYS, the vault trusts no root at all.
    expect(refused.body.errors.google_payment_data).toEqual(["no_root_signing_key"]);
  });

  it("a CRYPTOGRAM_3DS device card and its cryptogram are in no D1 or R2 state file, after being stored, read and used", async () => {
    const pan = "4895370012003478";
    const cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA=";
    const token = JSON.parse(
      await script([
        "--merchant-id",
        MERCHANT,
        "--merchant-key",
        merchantKeyFile,
        "--auth-method",
        "CRYPTOGRAM_3DS",
        "--pan",
        pan,
        "--cryptogram",
        cryptogram,
      ]),
    );
    const key = { "SVC-API-KEY": await decryptingKey(trusting, ["google-pay:reveal", "token:use"]) };
    const created = await send(trusting, "/google-pay", key, { google_payment_data: token });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.google_pay.id;
    const read = await (await fetch(`${trusting.baseUrl}/google-pay/${id}`, { headers: key })).json();
    expect(read).toMatchObject({ data: { number: pan }, authentication: { threeds_cryptogram: cryptogram } });
    const used = await send(trusting, "/detokenize", key, {
      card: `{{ google_pay: ${id} | json: '$.data.number' }}`,
      cryptogram: `{{ google_pay: ${id} | json: '$.authentication.threeds_cryptogram' }}`,
    });
    expect(used.body).toEqual({ card: pan, cryptogram });

    const files = filesUnder(stateDir);
    // The scan sees what D1 holds: the merchant identifier, kept in the clear, is there.
    expect(files.some((file) => file.bytes.includes(MERCHANT))).toBe(true);
    for (const { path, bytes } of files) {
      for (const secret of [pan, cryptogram, Buffer.from(cryptogram, "base64").toString("hex")]) {
        expect(bytes.includes(secret), `${secret} in ${path}`).toBe(false);
      }
    }
  });

  it("the deployed configurations name no root signing key: only the operator's setting is trusted", () => {
    for (const file of ["wrangler.toml", "wrangler.egress.toml"]) {
      expect(readFileSync(file, "utf8"), file).not.toContain("GOOGLE_PAY_ROOT_SIGNING_KEYS");
    }
  });

  it("npm start adds the test root to .dev.vars under its marker, renews only its own line, and leaves an operator's line alone", () => {
    const root = { publicKey: "cHVibGlj", privateKey: "c2VjcmV0", keyExpiration: "4102444800000" };
    const line = `GOOGLE_PAY_ROOT_SIGNING_KEYS='${rootSigningKeysOf(root)}'`;
    const added = devVarsTrustingTestRoot("VAULT_MASTER_KEY=abc\n", root);
    expect(added).toBe(`VAULT_MASTER_KEY=abc\n${DEV_VARS_MARKER}\n${line}\n`);
    expect(added).not.toContain(root.privateKey);

    const renewed = devVarsTrustingTestRoot(`A=1\n${DEV_VARS_MARKER}\nGOOGLE_PAY_ROOT_SIGNING_KEYS='{"keys":[]}'\nB=2\n`, root);
    expect(renewed).toBe(`A=1\n${DEV_VARS_MARKER}\n${line}\nB=2\n`);

    const operators = `GOOGLE_PAY_ROOT_SIGNING_KEYS='{"keys":[{"keyValue":"production"}]}'\n`;
    expect(devVarsTrustingTestRoot(operators, root)).toBeNull();
    expect(devVarsTrustingTestRoot(`# Google's keys\n${operators}`, root)).toBeNull();
  });
});
