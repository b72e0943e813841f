import { beforeAll, describe, expect, it } from "vitest";
import { refusedQuery, searchIds, sorted } from "../support/search";
import { createToken, seedTokenTenant } from "../support/tokens";

/** Rule 4: container:<path>, exact or with a trailing *. */

let key: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  ({ key } = await seedTokenTenant());
  const containers: Record<string, string[]> = {
    a: ["/a/"],
    ab: ["/a/b/"],
    abc: ["/a/b/c/"],
    sibling: ["/ab/"],
    both: ["/a/", "/a/b/"],
    elsewhere: ["/x/"],
  };
  for (const [name, paths] of Object.entries(containers)) {
    ids[name] = (await createToken(key, { type: "token", data: name, containers: paths })).id;
  }
});

const idsOf = (...names: string[]) => sorted(names.map((name) => ids[name]!));

describe("query syntax: containers", () => {
  it("container:<path> matches tokens in that container only, not its parents or children", async () => {
    expect(sorted(await searchIds(key, "container:/a/b/"))).toEqual(idsOf("ab", "both"));
  });

  it("a trailing * matches the container and its sub-containers", async () => {
    expect(sorted(await searchIds(key, "container:/a/*"))).toEqual(idsOf("a", "ab", "abc", "both"));
    expect(sorted(await searchIds(key, "container:/a/b/*"))).toEqual(idsOf("ab", "abc", "both"));
  });

  it("the trailing * may be inside quotes", async () => {
    expect(sorted(await searchIds(key, 'container:"/a/b/*"'))).toEqual(idsOf("ab", "abc", "both"));
  });

  it("container:/* matches every container", async () => {
    expect(sorted(await searchIds(key, "container:/*"))).toEqual(sorted(Object.values(ids)));
  });

  it("a token in several matching containers appears once", async () => {
    const found = await searchIds(key, "container:/a/*");
    expect(found.filter((id) => id === ids.both)).toHaveLength(1);
  });

  it("container paths are case-insensitive", async () => {
    expect(sorted(await searchIds(key, "container:/A/B/"))).toEqual(idsOf("ab", "both"));
  });

  it("* anywhere but the end of the path is a 400", async () => {
    expect((await refusedQuery(key, "container:/a*/b/")).message).toBe(
      "column 13: * is only allowed at the end of a container path, as in /a/*",
    );
    expect((await refusedQuery(key, "container:*/a/")).message).toBe(
      "column 11: * is only allowed at the end of a container path, as in /a/*",
    );
    expect((await refusedQuery(key, "container:/a/b*")).message).toBe("column 15: * must follow a /, as in /a/*");
    expect((await refusedQuery(key, "container:/a/?/")).message).toBe(
      "column 14: wildcards (* and ?) are only supported at the end of a container path, as in container:/a/*",
    );
  });

  it("a path that is not a valid container is a 400", async () => {
    for (const [query, column] of [
      ["container:a/b/", 11],
      ["container:/a/b", 11],
      ['container:"/a b/"', 11],
      ["container:/", 11],
      ["container:/a//", 11],
      ["container:/a/\\*", 11],
    ] as const) {
      const { message } = await refusedQuery(key, query);
      expect(message, query).toMatch(new RegExp(`^column ${column}: ".*" is not a container path like /segment/segment/`));
    }
  });
});
