/*
 * The merchant's style for an element, filtered before the frame applies it: only properties that
 * change how text looks, and only values that cannot load anything (no url(), image-set(), @import …).
 * Everything else is dropped, and named, so the frame can say what it dropped.
 */

export const STYLE_VARIANTS = ["base", "focus", "invalid", "complete", "empty"] as const;
export type StyleVariant = (typeof STYLE_VARIANTS)[number];

/** As the merchant passes it: properties in camelCase or kebab-case; `base` may nest these pseudo-classes. */
export type Style = Partial<Record<StyleVariant, Record<string, unknown>>>;
export const BASE_PSEUDO_CLASSES = ["::placeholder", ":hover", ":disabled"] as const;
export type PseudoClass = (typeof BASE_PSEUDO_CLASSES)[number];

export interface StyleRule {
  variant: StyleVariant;
  pseudoClass?: PseudoClass;
  /** Kebab-case property → value. */
  declarations: [string, string][];
}

const ALLOWED_PROPERTY =
  /^(color|caret-color|background-color|font|font-[a-z-]+|letter-spacing|line-height|text-[a-z-]+|padding|padding-(top|right|bottom|left)|-webkit-font-smoothing|-moz-osx-font-smoothing|-webkit-text-fill-color)$/;

/** Functions a value may call: colours and arithmetic, none of which can name a resource. */
const ALLOWED_FUNCTIONS = new Set([
  "rgb",
  "rgba",
  "hsl",
  "hsla",
  "hwb",
  "lab",
  "lch",
  "oklab",
  "oklch",
  "color-mix",
  "calc",
  "min",
  "max",
  "clamp",
]);

/** Escapes and comments could spell a function in pieces; at-rules and braces have no place in a value. */
const FORBIDDEN_CHARACTERS = /[\\@{}<>;]|\/\*/;

const MAX_VALUE_LENGTH = 200;

export function filterStyle(style: unknown): { rules: StyleRule[]; dropped: string[] } {
  const rules: StyleRule[] = [];
  const dropped: string[] = [];
  if (!isRecord(style)) return { rules, dropped: style === undefined ? [] : ["style"] };
  for (const [variant, properties] of Object.entries(style)) {
    if (!(STYLE_VARIANTS as readonly string[]).includes(variant) || !isRecord(properties)) {
      dropped.push(variant);
      continue;
    }
    const rule: StyleRule = { variant: variant as StyleVariant, declarations: [] };
    rules.push(rule);
    for (const [name, value] of Object.entries(properties)) {
      if (variant === "base" && (BASE_PSEUDO_CLASSES as readonly string[]).includes(name) && isRecord(value)) {
        const nested: StyleRule = { variant: "base", pseudoClass: name as PseudoClass, declarations: [] };
        rules.push(nested);
        for (const [nestedName, nestedValue] of Object.entries(value)) {
          addDeclaration(nested, nestedName, nestedValue, `${variant}.${name}.${nestedName}`, dropped);
        }
      } else {
        addDeclaration(rule, name, value, `${variant}.${name}`, dropped);
      }
    }
  }
  return { rules, dropped };
}

function addDeclaration(rule: StyleRule, name: string, value: unknown, where: string, dropped: string[]): void {
  const property = kebabCase(name);
  const text = typeof value === "number" && Number.isFinite(value) ? String(value) : value;
  if (ALLOWED_PROPERTY.test(property) && typeof text === "string" && isSafeValue(text)) rule.declarations.push([property, text]);
  else dropped.push(where);
}

export function isSafeValue(value: string): boolean {
  if (value.length > MAX_VALUE_LENGTH || FORBIDDEN_CHARACTERS.test(value)) return false;
  for (const [, name] of value.matchAll(/([\w-]*)\s*\(/g)) {
    if (!ALLOWED_FUNCTIONS.has(name!.toLowerCase())) return false;
  }
  return true;
}

/** fontSize → font-size, WebkitFontSmoothing → -webkit-font-smoothing; kebab-case stays as it is. */
function kebabCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
