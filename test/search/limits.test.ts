import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Rule 9: limits against abuse. */

let key: string;
let tokenId: string;

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  tokenId = (await createToken(key, { type: "token", data: "x", metadata: { term: "100" } })).id;
});

/** `metadata.term:1 OR metadata.term:2 …`: n distinct terms, each its own value. */
const terms = (n: number) => Array.from({ length: n }, (_, i) => `metadata.term:${i + 1}`).join(" OR ");

describe("query limits", () => {
  it("a query of 4,096 characters is accepted; a longer one is a 400", async () => {
    const prefix = 'metadata.term:100 OR metadata.padding:"';
    const longest = `${prefix}${"a".repeat(4096 - prefix.length - 1)}"`;
    expect(longest).toHaveLength(4096);
    expect(await searchIds(key, longest)).toEqual([tokenId]);
    expect((await refusedQuery(key, `${longest} `)).message).toBe("column 4097: a query is at most 4096 characters long");
  });

  it("a query of 100 terms is accepted; the 101st term is a 400", async () => {
    expect(await searchIds(key, terms(100))).toEqual([tokenId]);
    const tooMany = terms(101);
    const column = tooMany.lastIndexOf("metadata.term:101") + 1;
    expect((await refusedQuery(key, tooMany)).message).toBe(`column ${column}: a query has at most 100 terms`);
  });

  it("100 terms of two values each stay within the database's limits", async () => {
    const pairs = Array.from({ length: 100 }, (_, i) => `metadata.key${i}:value${i}`).join(" AND ");
    expect(await searchIds(key, pairs)).toEqual([]);
    const negated = Array.from({ length: 100 }, (_, i) => `NOT metadata.key${i}:value${i}`).join(" AND ");
    expect(await searchIds(key, negated)).toEqual([tokenId]);
  });

  it("nesting of 20 levels is accepted; the 21st level is a 400", async () => {
    const nested = (depth: number) => `${"(".repeat(depth)}metadata.term:100${")".repeat(depth)}`;
    expect(await searchIds(key, nested(20))).toEqual([tokenId]);
    expect((await refusedQuery(key, nested(21))).message).toBe("column 21: nesting (parentheses and NOT) is limited to 20 levels");
  });

  it("each NOT is a level of nesting too", async () => {
    expect(await searchIds(key, `${"NOT ".repeat(20)}metadata.term:100`)).toEqual([tokenId]);
    expect(await searchIds(key, `${"NOT (".repeat(10)}metadata.term:100${")".repeat(10)}`)).toEqual([tokenId]);
    expect((await refusedQuery(key, `${"!".repeat(21)}metadata.term:100`)).message).toBe(
      "column 21: nesting (parentheses and NOT) is limited to 20 levels",
    );
  });

  it("deeply nested input is refused before it can exhaust the parser", async () => {
    expect((await refusedQuery(key, "(".repeat(4000))).message).toBe("column 21: nesting (parentheses and NOT) is limited to 20 levels");
    expect((await refusedQuery(key, `${"-".repeat(4000)}type:token`)).message).toBe(
      "column 21: nesting (parentheses and NOT) is limited to 20 levels",
    );
  });
});
