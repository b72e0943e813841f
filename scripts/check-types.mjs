#!/usr/bin/env node
// Fails when src/worker-configuration.generated.d.ts is not what `npm run types` makes of wrangler.toml
// now. wrangler also reads .dev.vars, which holds each developer's own settings, so the types are
// generated from a copy of wrangler.toml in a temporary folder and compared with the committed file.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const generated = "src/worker-configuration.generated.d.ts";
const command = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts.types.split(" ");
const folder = mkdtempSync(join(tmpdir(), "vault-types-"));
try {
  copyFileSync(join(root, "wrangler.toml"), join(folder, "wrangler.toml"));
  mkdirSync(join(folder, "src"));
  symlinkSync(join(root, "src", "index.ts"), join(folder, "src", "index.ts"));
  execFileSync(join(root, "node_modules", ".bin", command[0]), command.slice(1), {
    cwd: folder,
    stdio: "ignore",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  const body = (text) => text.split("\n").slice(2).join("\n");
  if (body(readFileSync(join(folder, generated), "utf8")) !== body(readFileSync(join(root, generated), "utf8"))) {
    console.error(`${generated} is out of date with wrangler.toml: run \`npm run types\` and commit it`);
    process.exit(1);
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
