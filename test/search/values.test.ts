import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Rule 2: quoted and unquoted values, and escapes. */

let key: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  const notes = {
    spaced: "hello world",
    quoted: 'say "hi"',
    backslash: "c:\\temp",
    word: "hello",
    parenthesis: "a)b",
    star: "5*",
  };
  for (const [name, note] of Object.entries(notes)) {
    ids[name] = (await createToken(key, { type: "token", data: name, metadata: { note } })).id;
  }
});

describe("query syntax: values", () => {
  it("a value with spaces is wrapped in double quotes", async () => {
    expect(await searchIds(key, 'metadata.note:"hello world"')).toEqual([ids.spaced]);
  });

  it('inside quotes \\" and \\\\ are escapes', async () => {
    expect(await searchIds(key, 'metadata.note:"say \\"hi\\""')).toEqual([ids.quoted]);
    expect(await searchIds(key, 'metadata.note:"c:\\\\temp"')).toEqual([ids.backslash]);
  });

  it("an unquoted value ends at whitespace or )", async () => {
    expect(await searchIds(key, "(metadata.note:hello)")).toEqual([ids.word]);
    expect(await searchIds(key, "metadata.note:hello OR metadata.note:nothing")).toEqual([ids.word]);
  });

  it("in an unquoted value a backslash escapes the next character", async () => {
    expect(await searchIds(key, "metadata.note:hello\\ world")).toEqual([ids.spaced]);
    expect(await searchIds(key, "metadata.note:a\\)b")).toEqual([ids.parenthesis]);
    expect(await searchIds(key, "metadata.note:5\\*")).toEqual([ids.star]);
  });

  it("a quote that is never closed is a 400 at the end of the query", async () => {
    expect((await refusedQuery(key, 'metadata.note:"hello')).message).toBe('column 21: expected a closing quote (")');
  });

  it("a backslash at the end of the query is a 400", async () => {
    expect((await refusedQuery(key, "metadata.note:hello\\")).message).toBe("column 20: expected a character after the backslash");
  });

  it("an empty value is a 400", async () => {
    expect((await refusedQuery(key, "metadata.note:")).message).toBe(
      "column 15: expected a value after the colon (quote a value that has spaces)",
    );
    expect((await refusedQuery(key, 'metadata.note:""')).message).toBe("column 15: the value is empty");
  });
});
