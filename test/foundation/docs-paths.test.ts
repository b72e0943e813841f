import { describe, expect, it } from "vitest";
import app from "../../src/app.ts?raw";

/**
 * The README and the pages of docs/, by their path in the repository. Vite reads them when this file is
 * transformed, so a page added to docs/ is checked without being listed here.
 */
const PAGES: Record<string, string> = Object.fromEntries(
  Object.entries(import.meta.glob<string>(["/README.md", "/docs/*.md"], { query: "?raw", import: "default", eager: true })).map(
    ([path, text]) => [path.slice(1), text],
  ),
);

/**
 * Every file of the repository a page may name or link to, as the tree is now: workerd has no file
 * system, so Vite lists them when it transforms this file (none is loaded).
 */
const FILES = new Set(
  Object.keys(import.meta.glob(["/*.*", "/{src,docs,test,bench,bin,scripts,grammar,migrations}/**"])).map((path) => path.slice(1)),
);

/** `src/…` paths as prose names them: a folder (`src/tokens/`), a file (`src/http/problem.ts`) or a glob (`src/tokens/*.ts`). */
const SOURCE_PATH = /(?<![\w./-])src\/[\w.*/-]*/g;

/** The src/ paths a page names, leaving out templates such as `src/<feature>/routes.ts`. */
function sourcePathsOf(text: string): string[] {
  const paths: string[] = [];
  for (const match of text.matchAll(SOURCE_PATH)) {
    if (text[match.index + match[0].length] === "<") continue;
    paths.push(match[0].replace(/\.+$/, ""));
  }
  return paths;
}

/** Whether a named path is a file, or a folder holding files, in the tree (`*` matches within one segment). */
function exists(path: string): boolean {
  const folder = path.endsWith("/") ? path : `${path}/`;
  if (!path.includes("*")) return FILES.has(path) || [...FILES].some((file) => file.startsWith(folder));
  const pattern = new RegExp(`^${path.split("*").map(escapeRegExp).join("[^/]*")}(/|$)`);
  return [...FILES].some((file) => pattern.test(file));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Markdown link targets outside code: `[text](target)` and `<scheme://…>`. */
function linksOf(text: string): string[] {
  const prose = withoutFences(text).replace(/`[^`\n]*`/g, "");
  return [
    ...[...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!),
    ...[...prose.matchAll(/<([a-z]+:\/\/[^>\s]+)>/g)].map((match) => match[1]!),
  ];
}

/** The text without fenced blocks, where `# comment` is no heading and `[a](b)` no link. */
function withoutFences(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
}

/** The anchors of a page's headings, as a Markdown renderer makes them (`## Deleting a tenant (crypto-shredding)` → `deleting-a-tenant-crypto-shredding`). */
function anchorsOf(text: string): Set<string> {
  return new Set(
    [...withoutFences(text).matchAll(/^#{1,6} (.+)$/gm)].map((match) =>
      match[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replaceAll(" ", "-"),
    ),
  );
}

/** `docs/api.md` + `../README.md#configuration` → `README.md`, `configuration`. */
function resolveLink(page: string, target: string): { file: string; anchor: string | undefined } {
  const [relative, anchor] = target.split("#") as [string, string | undefined];
  if (relative === "") return { file: page, anchor };
  const parts = page.split("/").slice(0, -1);
  for (const part of relative.split("/")) {
    if (part === "..") parts.pop();
    else if (part !== "." && part !== "") parts.push(part);
  }
  return { file: parts.join("/"), anchor };
}

describe("the documentation names what exists", () => {
  it("reads the README and every page of docs/", () => {
    expect(Object.keys(PAGES)).toEqual(expect.arrayContaining(["README.md", "docs/api.md", "docs/architecture.md"]));
    expect(FILES.has("src/app.ts")).toBe(true);
  });

  it("every src/ path a page names exists", () => {
    const missing = Object.entries(PAGES).flatMap(([page, text]) =>
      sourcePathsOf(text)
        .filter((path) => !exists(path))
        .map((path) => `${page}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it("the line the README shows mounting the feature to copy is in src/app.ts", () => {
    const mount = /\*\*Adding a feature[^\n]*[\s\S]*?```ts\n([^\n]+)\n```/.exec(PAGES["README.md"]!)?.[1];
    expect(mount).toBeDefined();
    expect(app).toContain(mount);
  });

  it("every link stays in the repository and reaches a file and heading that exist", () => {
    const broken: string[] = [];
    for (const [page, text] of Object.entries(PAGES)) {
      for (const target of linksOf(text)) {
        if (/^[a-z]+:/.test(target)) {
          if (!/^http:\/\/localhost[:/]/.test(target)) broken.push(`${page}: ${target} points outside the repository`);
          continue;
        }
        const { file, anchor } = resolveLink(page, target);
        if (!exists(file)) broken.push(`${page}: ${target}`);
        else if (anchor !== undefined && PAGES[file] !== undefined && !anchorsOf(PAGES[file]).has(anchor)) {
          broken.push(`${page}: ${target} names no heading of ${file}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
