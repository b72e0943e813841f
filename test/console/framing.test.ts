import { describe, expect, it } from "vitest";
import HEADERS_FILE from "../../public/_headers?raw";

/*
 * No page of the console can be framed (issue 37). Workers static assets serve it with the headers
 * of public/_headers, which the worker under test does not see (its assets are not served through
 * SELF): the file itself is read here, as Vite reads it when it transforms this test.
 */

/** The headers public/_headers sets for one path pattern, by lower-case name. */
function headersOf(pattern: string): Map<string, string> {
  const blocks = HEADERS_FILE.split(/\n(?=\S)/).filter((block) => !block.startsWith("#"));
  const block = blocks.find((candidate) => candidate.split("\n")[0]!.trim() === pattern);
  const headers = new Map<string, string>();
  for (const line of block?.split("\n").slice(1) ?? []) {
    const match = /^\s+([^:#]+):\s*(.*)$/.exec(line);
    if (match) headers.set(match[1]!.trim().toLowerCase(), match[2]!.trim());
  }
  return headers;
}

describe("framing the console", () => {
  it.each(["/console", "/console/*"])("%s is never framed: X-Frame-Options DENY and frame-ancestors 'none'", (pattern) => {
    const headers = headersOf(pattern);
    expect(headers.get("x-frame-options")).toBe("DENY");
    expect(headers.get("content-security-policy")).toMatch(/(^|;\s*)frame-ancestors 'none'(;|$)/);
  });
});
