import { beforeAll, describe, expect, it } from "vitest";
import { compileSearch } from "../../src/search/compile";
import { parseQuery } from "../../src/search/parse";
import { refusedQuery, searchIds, sorted } from "../support/search";
import { createToken, SSN, seedTokenTenant, VISA } from "../support/tokens";

/** Rule 6: data:<value> through the blind indexes. */

let key: string;
let ssn: string;
let otherSsn: string;
let ein: string;
let custom: string;
let card: string;

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  ssn = (await createToken(key, { type: "social_security_number", data: SSN })).id;
  otherSsn = (await createToken(key, { type: "social_security_number", data: "987-65-4242" })).id;
  ein = (await createToken(key, { type: "employer_id_number", data: "12-3406789" })).id;
  custom = (await createToken(key, { type: "token", data: "Hello World", search_indexes: ["{{ data }}"] })).id;
  card = (await createToken(key, { type: "card_number", data: VISA })).id;
});

describe("query syntax: data", () => {
  it("data:<value> matches tokens with an evaluated search index equal to the value", async () => {
    expect(await searchIds(key, 'data:"Hello World"')).toEqual([custom]);
  });

  it("the match is case-insensitive", async () => {
    expect(await searchIds(key, 'data:"hELLO wORLD"')).toEqual([custom]);
  });

  it("the match is exact: a part of an index does not match", async () => {
    expect(await searchIds(key, "data:Hello")).toEqual([]);
    expect(await searchIds(key, "data:789")).toEqual([]);
  });

  it("SSNs and EINs are found by the value, the value without dashes and the last four digits", async () => {
    expect(await searchIds(key, `data:${SSN}`)).toEqual([ssn]);
    expect(await searchIds(key, "data:123456789")).toEqual([ssn]);
    expect(await searchIds(key, "data:12-3406789")).toEqual([ein]);
    expect(sorted(await searchIds(key, "data:6789"))).toEqual(sorted([ssn, ein]));
  });

  it("only tokens of type social_security_number, employer_id_number and token can match", async () => {
    expect(await searchIds(key, "data:4242")).toEqual([otherSsn]);
    expect(await searchIds(key, `data:${VISA}`)).toEqual([]);
    expect(await searchIds(key, `id:${card}`)).toEqual([card]);
  });

  it("a wildcard in a data value is a 400", async () => {
    expect((await refusedQuery(key, "data:67*")).message).toBe("column 8: wildcard search of data is not supported");
    expect((await refusedQuery(key, 'data:"6?89"')).message).toBe("column 8: wildcard search of data is not supported");
  });

  it("the data value never reaches the database: only its blind index does", () => {
    const compiled = compileSearch(
      parseQuery(`data:${SSN}`),
      { tenantId: "tenant", now: 0, containers: null, blindIndexes: new Map([[SSN, "BLIND-INDEX"]]) },
      { limit: 20, offset: 0, countLimit: 100 },
    );
    const sent = JSON.stringify([compiled.page, compiled.count]);
    expect(sent).toContain("BLIND-INDEX");
    expect(sent).not.toContain(SSN);
  });
});
