import type { ElementOptions } from "../protocol";
import type { Field } from "./fields";
import { filterStyle, type StyleRule, type StyleVariant } from "./styles";

/*
 * The merchant's options applied to the frame's inputs. The page's Content-Security-Policy allows no
 * inline style, so the filtered style goes into a constructed style sheet through the CSSOM, one
 * property at a time: the browser parses each value on its own and nothing can close a rule.
 */

const sheet = new CSSStyleSheet();

/** The state classes the frame's <html> carries, which the style's variants select on. */
const VARIANT_SELECTORS: Record<StyleVariant, string> = {
  base: "input",
  focus: ".is-focus input",
  invalid: ".is-invalid input",
  complete: ".is-complete input",
  empty: ".is-empty input",
};

export function applyOptions(fields: Field[], options: ElementOptions, defaultLabels: string[]): void {
  const { rules, dropped } = filterStyle(options.style);
  if (dropped.length > 0) console.warn(`Token vault elements: style dropped (not allowed): ${dropped.join(", ")}`);
  replaceRules(rules);
  fields.forEach((field, index) => {
    const label = fields.length === 1 && typeof options.label === "string" ? options.label : defaultLabels[index]!;
    field.input.setAttribute("aria-label", label);
    field.input.closest("label")!.querySelector("span")!.textContent = label;
    if (typeof options.placeholder === "string" && (index === 0 || fields.length === 1)) field.input.placeholder = options.placeholder;
    field.input.readOnly = options.readOnly === true;
    field.input.disabled = options.disabled === true;
  });
}

function replaceRules(rules: StyleRule[]): void {
  while (sheet.cssRules.length > 0) sheet.deleteRule(0);
  for (const { variant, pseudoClass, declarations } of rules) {
    const index = sheet.insertRule(`${VARIANT_SELECTORS[variant]}${pseudoClass ?? ""} {}`, sheet.cssRules.length);
    const style = (sheet.cssRules[index] as CSSStyleRule).style;
    for (const [property, value] of declarations) style.setProperty(property, value);
  }
  if (!document.adoptedStyleSheets.includes(sheet)) document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

/** Shows the element's state to the style's variants: focused, invalid (once it cannot be fixed by typing on), complete, empty. */
export function showState(state: { focused: boolean; empty: boolean; complete: boolean; invalid: boolean }): void {
  const root = document.documentElement.classList;
  root.toggle("is-focus", state.focused);
  root.toggle("is-empty", state.empty);
  root.toggle("is-complete", state.complete);
  root.toggle("is-invalid", state.invalid);
}
