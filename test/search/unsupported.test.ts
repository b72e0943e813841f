import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Rule 8: other fields and other Lucene features are a 400 that names them. */

let key: string;

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
});

async function expectRefusal(query: string, message: string) {
  expect((await refusedQuery(key, query)).message, query).toBe(message);
}

describe("query syntax: what is not supported", () => {
  it("any other field is a 400 that names it and lists the searchable fields", async () => {
    await expectRefusal(
      "type:token AND name:x",
      'column 16: unknown field "name": the searchable fields are id, type, fingerprint, created_by, modified_by, data, container, metadata.<key>, created_at, modified_at',
    );
    expect((await refusedQuery(key, "Type:token")).message).toMatch(/^column 1: unknown field "Type"/);
  });

  it("a term without a field is a 400", async () => {
    await expectRefusal("hello", "column 1: a term needs a field, as in type:token");
    await expectRefusal('type:token OR "hello world"', "column 15: a term needs a field, as in type:token");
  });

  it("fuzzy and proximity search (~) are a 400", async () => {
    await expectRefusal("metadata.name:jon~", "column 18: fuzzy search (~) is not supported; write \\~ to search for the character itself");
    await expectRefusal(
      "metadata.name:jon~2",
      "column 18: fuzzy search (~) is not supported; write \\~ to search for the character itself",
    );
    await expectRefusal('metadata.name:"jon smith"~2', "column 26: proximity search (~) is not supported");
  });

  it("boosting (^) is a 400", async () => {
    await expectRefusal("metadata.name:jon^2", "column 18: boosting (^) is not supported; write \\^ to search for the character itself");
    await expectRefusal('metadata.name:"jon"^2', "column 20: boosting (^) is not supported");
  });

  it("regular expressions are a 400", async () => {
    await expectRefusal(
      "metadata.name:/jo.n/",
      "column 15: regular expressions (/.../) are not supported; quote the value to search for it literally",
    );
  });

  it("wildcards other than a container's trailing * are a 400", async () => {
    const wildcards = "wildcards (* and ?) are only supported at the end of a container path, as in container:/a/*";
    await expectRefusal("metadata.name:jo*", `column 17: ${wildcards}`);
    await expectRefusal("metadata.name:j?n", `column 16: ${wildcards}`);
    await expectRefusal('fingerprint:"ab*"', `column 16: ${wildcards}`);
    await expectRefusal("*:*", `column 1: ${wildcards}`);
    await expectRefusal("metadata.na*:jon", `column 12: ${wildcards}`);
  });

  it("the + (required) operator is a 400", async () => {
    await expectRefusal("+type:token", "column 1: the + operator is not supported: terms joined by AND are already required");
  });

  it("&& and || are a 400 that names the operator to use", async () => {
    await expectRefusal("type:token && type:card_number", "column 12: && is not supported: write AND");
    await expectRefusal("type:token || type:card_number", "column 12: || is not supported: write OR");
  });

  it("ranges on fields other than dates are a 400", async () => {
    await expectRefusal("metadata.age:[1 TO 5]", "column 1: ranges are only supported on created_at and modified_at");
  });

  it("several values grouped under one field are a 400", async () => {
    await expectRefusal(
      "type:(token OR card_number)",
      "column 6: grouping values under one field is not supported: write field:a OR field:b",
    );
  });

  it("an escaped special character is an ordinary character of the value", async () => {
    const { key: own } = await seedTokenTenant();
    const token = await createToken(own, { type: "token", data: "x", metadata: { name: "jon~2^3*" } });
    expect(await searchIds(own, "metadata.name:jon\\~2\\^3\\*")).toEqual([token.id]);
    expect(await searchIds(own, 'metadata.name:"jon~2^3\\*"')).toEqual([token.id]);
  });
});
