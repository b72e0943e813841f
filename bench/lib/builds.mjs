// Worker bundles of earlier commits, for benchmarks that compare builds in one run.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * The worker bundle of a commit, built once into .bench/: its tree from `git archive`, this
 * checkout's node_modules beside it. The commit's own wrapper and parser are generated first.
 */
export function buildCommit(revision) {
  const commit = execFileSync("git", ["rev-parse", "--short", revision], { cwd: root, encoding: "utf8" }).trim();
  const source = join(root, ".bench", `src-${commit}`);
  const outdir = join(root, ".bench", `build-${commit}`);
  if (existsSync(join(outdir, "index.js"))) return { commit, buildDir: outdir };
  rmSync(source, { recursive: true, force: true });
  mkdirSync(source, { recursive: true });
  execFileSync("sh", ["-c", `git archive ${commit} | tar -x -C "${source}"`], { cwd: root });
  symlinkSync(join(root, "node_modules"), join(source, "node_modules"));
  console.log(`  building ${commit} (${revision})…`);
  // Older commits predate the generated wrapper: each runs only the build scripts it has.
  const { scripts } = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
  for (const script of ["build:parser", "build:wrapper"].filter((name) => scripts[name])) {
    execFileSync("npm", ["run", "--silent", script], { cwd: source, stdio: ["ignore", "ignore", "inherit"] });
  }
  execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir], {
    cwd: source,
    stdio: "ignore",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  return { commit, buildDir: outdir };
}
