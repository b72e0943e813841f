import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds, sorted } from "../support/search";
import { createToken, patchToken, seedTokenTenant } from "../support/tokens";

/** Rule 5: created_at and modified_at, single dates and ranges. */

let key: string;
let first: { id: string; created_at: string };
let middle: { id: string; created_at: string };
let last: { id: string; created_at: string };
let day: string;

const dayBefore = (date: string) => new Date(Date.parse(date) - 86_400_000).toISOString().slice(0, 10);
const dayAfter = (date: string) => new Date(Date.parse(date) + 86_400_000).toISOString().slice(0, 10);
const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  first = await createToken(key, { type: "token", data: "first" });
  await pause();
  middle = await createToken(key, { type: "token", data: "middle" });
  await pause();
  last = await createToken(key, { type: "token", data: "last" });
  expect(first.created_at < middle.created_at && middle.created_at < last.created_at).toBe(true);
  day = middle.created_at.slice(0, 10);
});

const ids = (...tokens: { id: string }[]) => sorted(tokens.map((token) => token.id));
const found = async (query: string) => sorted(await searchIds(key, query));

describe("query syntax: dates", () => {
  it("[START TO END] includes both ends", async () => {
    expect(await found(`created_at:[${first.created_at} TO ${last.created_at}]`)).toEqual(ids(first, middle, last));
  });

  it("{START TO END} excludes both ends", async () => {
    expect(await found(`created_at:{${first.created_at} TO ${last.created_at}}`)).toEqual(ids(middle));
  });

  it("brackets may be mixed: each side is inclusive or exclusive on its own", async () => {
    expect(await found(`created_at:[${first.created_at} TO ${last.created_at}}`)).toEqual(ids(first, middle));
    expect(await found(`created_at:{${first.created_at} TO ${last.created_at}]`)).toEqual(ids(middle, last));
  });

  it("* leaves a side open", async () => {
    expect(await found(`created_at:[${middle.created_at} TO *]`)).toEqual(ids(middle, last));
    expect(await found(`created_at:[* TO ${middle.created_at}]`)).toEqual(ids(first, middle));
    expect(await found("created_at:[* TO *]")).toEqual(ids(first, middle, last));
  });

  it("a date without a time stands for the whole UTC day: included by an inclusive bound, excluded by an exclusive one", async () => {
    expect(await found(`created_at:[${day} TO ${day}]`)).toEqual(ids(first, middle, last));
    expect(await found(`created_at:{${day} TO *]`)).toEqual([]);
    expect(await found(`created_at:[* TO ${day}}`)).toEqual([]);
    expect(await found(`created_at:{${dayBefore(day)} TO ${dayAfter(day)}}`)).toEqual(ids(first, middle, last));
    expect(await found(`created_at:[${dayBefore(day)} TO ${day}}`)).toEqual([]);
  });

  it("a single date matches that day, and a single date-time that instant", async () => {
    expect(await found(`created_at:${day}`)).toEqual(ids(first, middle, last));
    expect(await found(`created_at:${dayBefore(day)}`)).toEqual([]);
    expect(await found(`created_at:${middle.created_at}`)).toEqual(ids(middle));
  });

  it("a date-time written to the second or to the minute stands for that second or minute", async () => {
    const tokens = [first, middle, last];
    const second = middle.created_at.slice(0, 19);
    const minute = middle.created_at.slice(0, 16);
    expect(await found(`created_at:${second}Z`)).toEqual(ids(...tokens.filter((token) => token.created_at.startsWith(second))));
    expect(await found(`created_at:${minute}`)).toEqual(ids(...tokens.filter((token) => token.created_at.startsWith(minute))));
  });

  it("modified_at follows the last update of the token", async () => {
    await pause();
    const reply = await patchToken(key, first.id, { metadata: { touched: "yes" } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const modifiedAt: string = reply.body.modified_at;
    expect(modifiedAt > last.created_at).toBe(true);
    expect(await found(`modified_at:[${modifiedAt} TO *]`)).toEqual(ids(first));
    expect(await found(`modified_at:${modifiedAt}`)).toEqual(ids(first));
    expect(await found(`created_at:[${modifiedAt} TO *]`)).toEqual([]);
  });

  it("an invalid date is a 400 naming the value", async () => {
    const cases: [string, string][] = [
      ["created_at:2024-02-30", "column 12"],
      ["created_at:yesterday", "column 12"],
      ["modified_at:2024-05-01T25:00", "column 13"],
      ["created_at:2024-05-01T10:00:00+02:00", "column 12"],
      ["created_at:[2024-13-01 TO *]", "column 13"],
      ["created_at:[* TO 2024-05]", "column 18"],
    ];
    for (const [query, column] of cases) {
      const { message } = await refusedQuery(key, query);
      expect(message, query).toMatch(new RegExp(`^${column}: ".*" is not an ISO 8601 date \\(2024-05-01\\) or UTC date-time`));
    }
  });

  it("a range without TO or without its closing bracket is a 400", async () => {
    expect((await refusedQuery(key, "created_at:[2024-01-01 2024-02-01]")).message).toBe(
      "column 23: expected TO between the two ends of the range, as in [2024-01-01 TO 2024-02-01]",
    );
    expect((await refusedQuery(key, "created_at:[2024-01-01 TO 2024-02-01")).message).toBe("column 37: expected ] or } to close the range");
  });
});
