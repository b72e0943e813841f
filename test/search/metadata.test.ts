import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Rule 3: metadata.<key>:<value>. */

let key: string;
let acme: string;
let globex: string;
let spaced: string;

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  acme = (await createToken(key, { type: "token", data: "1", metadata: { Customer: "Acme", plan: "gold" } })).id;
  globex = (await createToken(key, { type: "token", data: "2", metadata: { customer: "Globex", tier: "acme" } })).id;
  spaced = (await createToken(key, { type: "token", data: "3", metadata: { "order id": "A-7" } })).id;
});

describe("query syntax: metadata", () => {
  it("metadata.<key>:<value> matches tokens whose metadata holds that entry", async () => {
    expect(await searchIds(key, "metadata.customer:Acme")).toEqual([acme]);
    expect(await searchIds(key, "metadata.customer:Globex")).toEqual([globex]);
  });

  it("the match is exact: no prefix or partial match", async () => {
    expect(await searchIds(key, "metadata.customer:Acm")).toEqual([]);
    expect(await searchIds(key, "metadata.custom:Acme")).toEqual([]);
  });

  it("key and value are case-insensitive", async () => {
    expect(await searchIds(key, "metadata.CUSTOMER:aCmE")).toEqual([acme]);
  });

  it("the value must belong to the named key", async () => {
    expect(await searchIds(key, "metadata.tier:acme")).toEqual([globex]);
    expect(await searchIds(key, "metadata.plan:acme")).toEqual([]);
  });

  it("a key with spaces or other characters is written with backslashes", async () => {
    expect(await searchIds(key, "metadata.order\\ id:a-7")).toEqual([spaced]);
  });

  it("the key is required: metadata without a key is a 400", async () => {
    expect((await refusedQuery(key, "metadata:Acme")).message).toBe("column 1: metadata needs a key, as in metadata.customer:42");
    expect((await refusedQuery(key, "type:token OR metadata.:Acme")).message).toBe(
      "column 15: metadata needs a key, as in metadata.customer:42",
    );
  });

  it("the value is required: a metadata term without a value is a 400", async () => {
    expect((await refusedQuery(key, "metadata.customer:")).message).toBe(
      "column 19: expected a value after the colon (quote a value that has spaces)",
    );
  });
});
