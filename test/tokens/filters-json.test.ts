import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant, type TokenTenant } from "../support/tokens";

/** `json: '<path>'`: JSONPath over token data, inside workerd (no eval), evaluated through POST /detokenize. */

let tenant: TokenTenant;

beforeAll(async () => {
  tenant = await seedTokenTenant();
});

const LIBRARY = {
  books: [
    { category: "fiction", author: "Herman Melville", title: "Moby Dick", isbn: "0-553-21311-3", price: 8.99 },
    { category: "fantasy", author: "J. R. R. Tolkien", title: "The Lord of the Rings", isbn: "0-395-19395-8", price: 22.99 },
  ],
  bicycle: { color: "red", price: 19.95, lock: { number: "4711" } },
};

function detokenize(data: unknown, path: string, then = "") {
  const filters = `json: "${path}"${then ? ` | ${then}` : ""}`;
  return createToken(tenant.key, { type: "token", data }).then((token) =>
    call("POST", "/detokenize", { key: tenant.key, body: { value: `{{ ${token.id} | ${filters} }}` } }),
  );
}

/** The selected value, through POST /detokenize (objects and arrays as themselves, the rest as text). */
async function selected(data: unknown, path: string, then = ""): Promise<unknown> {
  const reply = await detokenize(data, path, then);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.value;
}

async function refused(data: unknown, path: string): Promise<string> {
  const problem = expectProblem(await detokenize(data, path), 400);
  expect(Object.keys(problem.errors ?? {})).toEqual(["value"]);
  return problem.errors!.value![0]!;
}

describe("json: json_path_expression", () => {
  it("selects members and indexes", async () => {
    expect(await selected(LIBRARY, "$.bicycle.color")).toBe("red");
    expect(await selected(LIBRARY, "$.bicycle.price")).toBe("19.95");
    expect(await selected(LIBRARY, "$.books[0].author")).toBe("Herman Melville");
    expect(await selected(LIBRARY, "$['bicycle']['color']")).toBe("red");
  });

  it("keeps the selected value's JSON type", async () => {
    // Detokenization writes a number as text; json_stringify shows it was a number.
    expect(await selected(LIBRARY, "$.bicycle.price", "json_stringify")).toBe("19.95");
    expect(await selected(LIBRARY, "$.bicycle.color", "json_stringify")).toBe('"red"');
  });

  it("selects an object or array as that value", async () => {
    expect(await selected(LIBRARY, "$.bicycle")).toEqual(LIBRARY.bicycle);
    expect(await selected({ a: [1, { b: 2 }] }, "$.a")).toEqual([1, { b: 2 }]);
  });

  it("runs filter expressions without eval", async () => {
    expect(await selected(LIBRARY, "$.books[?(@.price < 10)].title")).toBe("Moby Dick");
    expect(await selected(LIBRARY, "$.books[?(@.category == 'fantasy' && @.price > 20)].isbn")).toBe("0-395-19395-8");
  });

  it("does not select an element on which a filter fails", async () => {
    const data = { items: [{ v: 1 }, { tag: { name: "a" }, v: 2 }] };
    expect(await selected(data, "$.items[?(@.tag.name == 'a')].v")).toBe("2");
  });

  it("descends recursively", async () => {
    expect(await selected(LIBRARY, "$..number")).toBe("4711");
    expect(await selected(LIBRARY, "$..books[?(@.price > 20)].author")).toBe("J. R. R. Tolkien");
  });

  it("takes script expressions, slices and wildcards that end in one value", async () => {
    expect(await selected(LIBRARY, "$.books[(@.length-1)].title")).toBe("The Lord of the Rings");
    expect(await selected(LIBRARY, "$.books[-1:].price")).toBe("22.99");
    expect(await selected({ only: { one: 1 } }, "$.only.*")).toBe("1");
  });

  it("gives null for a path that selects nothing", async () => {
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const mask = { v: "{{ data | json: '$.books[?(@.price > 100)].title' }}" };
    const token = await createToken(tenant.key, { type: "token", data: LIBRARY, mask });
    expect((await call("GET", `/tokens/${token.id}`, { key: reader.key })).body.data).toEqual({ v: null });
  });

  it("renders nothing in text for a path that selects nothing", async () => {
    expect(await selected(LIBRARY, "$.nonexistent")).toBe("");
  });

  it("reads string data as JSON", async () => {
    expect(await selected('{"a":{"b":7}}', "$.a.b", "json_stringify")).toBe("7");
    expect(await selected("7", "$", "json_stringify")).toBe("7");
  });

  it("refuses a path that selects several values (400)", async () => {
    expect(await refused(LIBRARY, "$.books..author")).toContain("json path selects 2 values; it must select one");
    expect(await refused(LIBRARY, "$.books[*].price")).toContain("json path selects 2 values");
  });

  it("refuses a path that does not start with $", async () => {
    expect(await refused(LIBRARY, "books[0]")).toContain("json needs a path that starts with $");
  });

  it("refuses string data that is not JSON, without echoing it", async () => {
    const problem = expectProblem(await detokenize("secret text", "$.a"), 400);
    expect(problem.errors?.value?.[0]).toContain("json needs JSON data");
    expect(JSON.stringify(problem)).not.toContain("secret text");
  });

  it("refuses filters that call functions, assign, concatenate or build lists", async () => {
    expect(await refused(LIBRARY, "$.books[?(@.title.repeat(100000000))].price")).toContain("json path filters may not call functions");
    expect(await refused(LIBRARY, "$.books[?(@['title']['repeat'](9))].price")).toContain("may not call functions");
    for (const filter of ["@.price = 1", "@.title + @.title == 'x'", "[@.title, @.title]", "x = 1; x"]) {
      expect(await refused(LIBRARY, `$.books[?(${filter})].price`)).toContain(
        "json path filters may read, compare and combine values, but not assign, concatenate with + or build lists",
      );
    }
  });

  it("charges every step through the data to the render's memory budget", async () => {
    let deep: unknown = { leaf: 1 };
    for (let level = 0; level < 30; level++) deep = { a: deep, b: [1, 2, 3] };
    expect(await refused(deep, "$..*..*..*..*..*")).toContain("more than its budget");
  });
});
