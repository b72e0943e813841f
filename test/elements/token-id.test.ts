import { describe, expect, it } from "vitest";
import { isTokenId } from "../../elements/frame/token-id";
import { TOKEN_ID_FORBIDDEN, tokenIdProblem } from "../../src/tokens/id-format";

/*
 * The frame's token id rule (elements/frame/token-id.ts) is a copy of the vault's (src/tokens/id-format.ts),
 * which the frame cannot import: these hold the two together, so that the frame sends every id the
 * vault could hold and nothing else, but ids of dots only.
 */

const IDS = [
  "3f2a9c1e-7b4d-4e8a-9f01-23456789abcd",
  "3F2A9C1E-7B4D-4E8A-9F01-23456789ABCD",
  "order-42",
  "abc",
  "ab",
  "a".repeat(400),
  "a".repeat(401),
  "with space",
  " leading",
  "trailing ",
  "\u00a0nbsp",
  "tab\tinside",
  "nul\u0000",
  "del\u007f",
  "ünïcödé-ïd",
  "a.b.c",
  "...",
  "....",
  "%2e%2e",
  "",
  ...[...TOKEN_ID_FORBIDDEN].map((character) => `id${character}x`),
  ...Array.from({ length: 32 }, (_, code) => `control${String.fromCharCode(code)}x`),
];

describe("elements: the frame's token ids", () => {
  it("takes what the vault's rule takes, one id at a time", () => {
    for (const id of IDS.filter((id) => !/^\.+$/.test(id))) {
      expect(isTokenId(id), JSON.stringify(id)).toBe(tokenIdProblem(id) === null);
    }
  });

  it("refuses ids of dots only, which a URL path reads as a step, and anything but a string", () => {
    for (const id of [".", "..", "...", "....", undefined, null, 42, ["abc"], { id: "abc" }]) expect(isTokenId(id)).toBe(false);
  });
});
