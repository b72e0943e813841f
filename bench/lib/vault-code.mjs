// The vault's own modules, for the benchmarks that run them in Node (seeding tokens, compiling
// searches): bundled from src/ with esbuild, never copied, so a change to the vault's sealing or
// search is what the benchmarks run. Every src/ module they import is named here, and only here.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const ENTRY = `
export { Keyring } from "./src/crypto/keyring";
export { DataKeys, TenantKeys } from "./src/crypto/tenant-keys";
export { compileSearch, compileSearchAfter } from "./src/search/compile";
export { parseQuery } from "./src/search/parse";
export { parse as parseGenerated } from "./src/search/parser.generated.js";
export { definitionOf, evaluate } from "./src/tokens/definition";
export { WorkBudget } from "./src/tokens/expressions";
export { sealToken } from "./src/tokens/sealing";
export { insertTokens } from "./src/tokens/storage-writes";
`;

let bundled;

/** The modules above, bundled once per process. */
export function vaultCode() {
  bundled ??= bundle();
  return bundled;
}

async function bundle() {
  const result = await build({
    stdin: { contents: ENTRY, resolveDir: root, loader: "ts" },
    bundle: true,
    format: "esm",
    platform: "node",
    // Packages stay imports, resolved from node_modules: bundling liquidjs's CommonJS build into ESM
    // breaks on its dynamic require of "stream".
    packages: "external",
    write: false,
    logLevel: "error",
  });
  const file = join(root, ".bench", "vault-code.mjs");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, result.outputFiles[0].text);
  return import(pathToFileURL(file).href);
}
