// Copies the API reference page's renderer (swagger-ui-dist, pinned in package.json) into
// public/docs/vendor/, which Workers static assets serve beside the worker (wrangler.toml [assets]):
// the page at /docs loads nothing from outside the vault. The copies are generated (git-ignored);
// public/docs/init.js is the page's own code.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "node_modules", "swagger-ui-dist");
const target = join(root, "public", "docs", "vendor");
const FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"];

mkdirSync(target, { recursive: true });
for (const file of FILES) {
  const from = join(source, file);
  const to = join(target, file);
  if (!existsSync(to) || !readFileSync(to).equals(readFileSync(from))) copyFileSync(from, to);
}
