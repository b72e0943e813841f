import { describe, expect, it } from "vitest";
import { CHUNK_BYTES, chunked, jsonBytes } from "../../src/db/chunks";

/*
 * jsonBytes sizes the audit log's chunks (src/audit/storage.ts, recorder.ts): an ASCII text by its
 * length, any other encoded. A text it sized short would let a chunk pass D1's 2 MB value limit.
 */

const utf8 = new TextEncoder();

describe("jsonBytes", () => {
  it.each([
    ["empty", ""],
    ["ASCII with NUL and DEL", "a\0b\x7f\n"],
    ["one byte past ASCII", "\x80"],
    ["Latin", "é".repeat(10)],
    ["CJK", "名前".repeat(10)],
    ["a surrogate pair", "😀x"],
    ["a lone high surrogate", "\ud800"],
    ["a lone low surrogate after ASCII", "abc\udfff"],
    ["the highest BMP unit", "\uffff"],
    ["JSON of a lone surrogate (escaped)", JSON.stringify({ message: "\ud800" })],
  ])("is the UTF-8 size of %s", (_, text) => {
    expect(jsonBytes(text)).toBe(utf8.encode(text).length);
  });

  it("keeps a chunk of non-ASCII messages within CHUNK_BYTES once the chunk is encoded", () => {
    const entries = Array.from({ length: 400 }, (_, i) => ({ i, message: `${"名".repeat(1_000)}😀\ud800` }));
    for (const chunk of chunked(entries, (entry) => jsonBytes(JSON.stringify(entry)) + 1)) {
      expect(utf8.encode(JSON.stringify(chunk)).length).toBeLessThanOrEqual(CHUNK_BYTES + 1);
    }
  });
});
