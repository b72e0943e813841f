import { describe, expect, it } from "vitest";
import conventions from "../../docs/api.md?raw";
import * as limits from "../../src/limits";

/** Every limit of src/limits.ts by the name the docs give it (`TOKENS.maxContainers`, `PAGE_MAX_SIZE`). */
function definedLimits(): Map<string, number> {
  const defined = new Map<string, number>();
  for (const [name, value] of Object.entries(limits)) {
    if (typeof value === "number") defined.set(name, value);
    else for (const [member, limit] of Object.entries(value)) defined.set(`${name}.${member}`, limit as number);
  }
  return defined;
}

/** The Limits table of docs/api.md: each row's documented numbers, in order, and the constants they come from. */
function documentedRows(): { limit: string; numbers: number[]; constants: string[] }[] {
  const section = conventions.split("\n## Limits\n")[1]?.split("\n## ")[0] ?? "";
  return section
    .split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| Limit |"))
    .map((line) => {
      const [limit, value, constants] = line.split(" | ").map((cell) => cell.replace(/^\| |\s*\|$/g, ""));
      return {
        limit: limit!,
        numbers: [...value!.matchAll(/\d[\d,]*/g)].map((match) => Number(match[0].replaceAll(",", ""))),
        constants: [...constants!.matchAll(/`([^`]+)`/g)].map((match) => match[1]!),
      };
    });
}

describe("the limits table of docs/api.md", () => {
  it("documents each constant with the value src/limits.ts defines", () => {
    const defined = definedLimits();
    const rows = documentedRows();
    expect(rows.length).toBeGreaterThan(20);
    for (const row of rows) {
      const values = row.constants.map((constant) => defined.get(constant));
      expect(values, `${row.limit}: ${row.constants.join(", ")}`).not.toContain(undefined);
      expect(row.numbers.slice(0, values.length), row.limit).toEqual(values);
    }
  });

  it("lists every limit src/limits.ts defines", () => {
    const documented = new Set(documentedRows().flatMap((row) => row.constants));
    expect([...definedLimits().keys()].filter((name) => !documented.has(name))).toEqual([]);
  });
});
