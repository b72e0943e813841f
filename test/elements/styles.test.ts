import { describe, expect, it } from "vitest";
import { filterStyle } from "../../elements/frame/styles";

/* The merchant's style as a frame filters it (elements/frame/styles.ts) before applying it. */

describe("element styles", () => {
  it("keeps the allow-listed properties of each variant, in camelCase or kebab-case", () => {
    const { rules, dropped } = filterStyle({
      base: { color: "#333", fontSize: "16px", "letter-spacing": "0.5px", lineHeight: 1.5, padding: "4px 0", textTransform: "uppercase" },
      focus: { color: "rgb(0, 0, 255)" },
      invalid: { color: "hsl(0 80% 40%)" },
      complete: { fontWeight: 600 },
      empty: { fontStyle: "italic" },
    });
    expect(dropped).toEqual([]);
    expect(rules.map(({ variant, declarations }) => [variant, declarations])).toEqual([
      [
        "base",
        [
          ["color", "#333"],
          ["font-size", "16px"],
          ["letter-spacing", "0.5px"],
          ["line-height", "1.5"],
          ["padding", "4px 0"],
          ["text-transform", "uppercase"],
        ],
      ],
      ["focus", [["color", "rgb(0, 0, 255)"]]],
      ["invalid", [["color", "hsl(0 80% 40%)"]]],
      ["complete", [["font-weight", "600"]]],
      ["empty", [["font-style", "italic"]]],
    ]);
  });

  it("base may hold ::placeholder, :hover and :disabled; other pseudo-classes and other variants are dropped", () => {
    const { rules, dropped } = filterStyle({
      base: {
        "::placeholder": { color: "#999" },
        ":hover": { color: "#000" },
        ":disabled": { color: "#ccc" },
        "::selection": { color: "red" },
      },
      focus: { "::placeholder": { color: "red" } },
      hover: { color: "red" },
    });
    expect(rules.filter((rule) => rule.pseudoClass).map((rule) => rule.pseudoClass)).toEqual(["::placeholder", ":hover", ":disabled"]);
    expect(dropped).toEqual(["base.::selection", "focus.::placeholder", "hover"]);
  });

  it("drops every property outside the allow-list, background-image and position among them", () => {
    const { rules, dropped } = filterStyle({
      base: { backgroundImage: "linear-gradient(red, blue)", position: "absolute", content: '"x"', border: "1px solid red", color: "red" },
    });
    expect(rules[0]!.declarations).toEqual([["color", "red"]]);
    expect(dropped).toEqual(["base.backgroundImage", "base.position", "base.content", "base.border"]);
  });

  it.each([
    "url(https://tracker.example/pixel.png)",
    "URL( 'https://tracker.example/pixel.png' )",
    'image-set("a.png" 1x)',
    "-webkit-image-set(url(a.png) 1x)",
    "expression(alert(1))",
    "@import 'https://tracker.example/x.css'",
    "u\\72 l(https://tracker.example/)",
    "ur/**/l(https://tracker.example/)",
    "red; background-image: url(x)",
    "var(--anything)",
    "attr(data-x)",
  ])("never keeps a value that could load something: %s", (value) => {
    const { rules, dropped } = filterStyle({ base: { fontFamily: value, color: value } });
    expect(rules[0]!.declarations).toEqual([]);
    expect(dropped).toEqual(["base.fontFamily", "base.color"]);
  });

  it("drops a style that is not an object, and values that are neither strings nor numbers", () => {
    expect(filterStyle("color: red")).toEqual({ rules: [], dropped: ["style"] });
    expect(filterStyle(undefined)).toEqual({ rules: [], dropped: [] });
    expect(filterStyle({ base: { color: { value: "red" }, fontSize: Number.NaN } }).dropped).toEqual(["base.color", "base.fontSize"]);
  });
});
