import { Context, Liquid, toValueSync, Value, type Template } from "liquidjs";

/**
 * Liquid expressions over token data: search indexes, fingerprint expressions and masks. Tenants
 * write them, so the engine reads no files (no include/render/layout/block), only sees own
 * properties, refuses unknown filters at parse time, and bounds the work of one render.
 */

/** A broken or failing expression; the message says why and never holds token data. */
export class ExpressionError extends Error {}

export const EXPRESSION_MAX_LENGTH = 1000;
/** Per render: tags and outputs rendered, and characters or items allocated (ranges, strings). */
const RENDER_LIMITS = { templateLimit: 10_000, memoryLimit: 1_000_000 };
const DEFAULT_MASK_CHAR = "X";
const MAX_PAD_LENGTH = 1000;
const FILE_TAGS = ["include", "render", "layout", "block"];

export interface ExpressionScope {
  data: unknown;
  metadata?: Record<string, string>;
}

const engine = new Liquid({
  strictFilters: true,
  ownPropertyOnly: true,
  templates: {},
  parseLimit: EXPRESSION_MAX_LENGTH,
  // Objects and arrays render as canonical JSON rather than "[object Object]".
  outputEscape: (value: unknown) => textOf(value),
});
for (const tag of FILE_TAGS) delete engine.tags[tag];

engine.registerFilter("last4", (value: unknown) => textOf(value).slice(-4));
engine.registerFilter("reveal_last", (value: unknown, count: unknown, maskChar: unknown = DEFAULT_MASK_CHAR) =>
  revealEnds(textOf(value), 0, countArgument("reveal_last", count), maskCharArgument("reveal_last", maskChar)),
);
engine.registerFilter(
  "reveal",
  (value: unknown, first: unknown, last: unknown, maskChar: unknown = DEFAULT_MASK_CHAR) =>
    revealEnds(
      textOf(value),
      countArgument("reveal", first),
      countArgument("reveal", last),
      maskCharArgument("reveal", maskChar),
    ),
);
// With one argument, replace removes the pattern, as `remove` does. Chained replaces can grow a
// string geometrically, so the output size is charged to the render's memory limit first.
engine.registerFilter("replace", function (this: { context: Context }, value: unknown, pattern: unknown, replacement: unknown = "") {
  const parts = textOf(value).split(textOf(pattern));
  const joiner = textOf(replacement);
  this.context.memoryLimit.use(parts.reduce((size, part) => size + part.length, 0) + (parts.length - 1) * joiner.length);
  return parts.join(joiner);
});
engine.registerFilter("json", (value: unknown, path: unknown) => selectJsonPath(value, textOf(path)));
engine.registerFilter("stringify", (value: unknown) => canonicalJson(value));
engine.registerFilter("json_stringify", (value: unknown) => canonicalJson(value));
engine.registerFilter("pad_left", (value: unknown, length: unknown, padding: unknown = " ") =>
  textOf(value).padStart(padLength("pad_left", length), padCharacters("pad_left", padding)),
);
engine.registerFilter("pad_right", (value: unknown, length: unknown, padding: unknown = " ") =>
  textOf(value).padEnd(padLength("pad_right", length), padCharacters("pad_right", padding)),
);

const CACHE_LIMIT = 1000;
const compiled = new Map<string, Template[]>();

/** Parses once per isolate; later calls with the same source reuse the parsed template. */
export function compileExpression(source: string): Template[] {
  const cached = compiled.get(source);
  if (cached) return cached;
  let template: Template[];
  try {
    template = engine.parse(source);
  } catch (error) {
    throw new ExpressionError(`is not a valid expression: ${messageOf(error)}`);
  }
  if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value as string);
  compiled.set(source, template);
  return template;
}

/** Why the source does not parse, or null when it does: for schema validation. */
export function expressionProblem(source: string): string | null {
  try {
    compileExpression(source);
    return null;
  } catch (error) {
    return (error as ExpressionError).message;
  }
}

export function evaluateExpression(source: string, scope: ExpressionScope): string {
  const template = compileExpression(source);
  try {
    return String(engine.renderSync(template, scope, RENDER_LIMITS));
  } catch (error) {
    throw new ExpressionError(`could not be evaluated: ${messageOf(error)}`);
  }
}

const WHOLE_OUTPUT = /^\s*\{\{(?!-)([\s\S]*?)(?<!-)\}\}\s*$/;
const values = new Map<string, Value>();

/**
 * Like evaluateExpression, but a source that is exactly one output (`{{ data.month }}`, with
 * filters) gives the value itself, with its JSON type (a number stays a number, an object an
 * object); any other source renders to a string. Object masks and detokenization use this.
 */
export function evaluateValue(source: string, scope: ExpressionScope): unknown {
  const whole = WHOLE_OUTPUT.exec(source);
  if (!whole || whole[1]!.includes("{{") || whole[1]!.includes("}}")) return evaluateExpression(source, scope);
  compileExpression(source);
  let value = values.get(source);
  if (!value) {
    value = new Value(whole[1]!, engine);
    if (values.size >= CACHE_LIMIT) values.delete(values.keys().next().value as string);
    values.set(source, value);
  }
  try {
    const context = new Context(scope, engine.options, RENDER_LIMITS, { liquid: engine });
    return plainValue(toValueSync(value.value(context)));
  } catch (error) {
    throw new ExpressionError(`could not be evaluated: ${messageOf(error)}`);
  }
}

/** Undefined (a missing member) is null in JSON. */
function plainValue(value: unknown): unknown {
  return value === undefined ? null : value;
}

/** The original message of a filter's error, not liquidjs's wrapper around it. */
function messageOf(error: unknown): string {
  const original = (error as { originalError?: unknown }).originalError;
  if (original instanceof ExpressionError) return original.message;
  return error instanceof Error ? error.message : String(error);
}

function textOf(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return canonicalJson(value);
  return String(value);
}

/** JSON with object keys sorted, so equal data stringifies (and fingerprints) equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) =>
    member !== null && typeof member === "object" && !Array.isArray(member)
      ? Object.fromEntries(Object.entries(member).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : member,
  );
}

function revealEnds(text: string, first: number, last: number, maskChar: string): string {
  if (first + last >= text.length) return text;
  return text.slice(0, first) + maskChar.repeat(text.length - first - last) + text.slice(text.length - last);
}

function countArgument(filter: string, value: unknown): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 0) throw new ExpressionError(`${filter} needs a count of zero or more characters`);
  return count;
}

function maskCharArgument(filter: string, value: unknown): string {
  const maskChar = textOf(value);
  if ([...maskChar].length !== 1) throw new ExpressionError(`${filter} needs a mask character of exactly one character`);
  return maskChar;
}

function padLength(filter: string, value: unknown): number {
  const length = Number(value);
  if (!Number.isInteger(length) || length < 0 || length > MAX_PAD_LENGTH) {
    throw new ExpressionError(`${filter} needs a length between 0 and ${MAX_PAD_LENGTH}`);
  }
  return length;
}

function padCharacters(filter: string, value: unknown): string {
  const padding = textOf(value);
  if (padding.length === 0) throw new ExpressionError(`${filter} needs a non-empty padding`);
  return padding;
}

const PATH_STEP = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\])/;

/**
 * `json: '$.a.b[0]'`: a JSON path that names exactly one value (members and indexes only, no
 * wildcards, slices, filters or recursive descent). String data is parsed as JSON first.
 */
function selectJsonPath(value: unknown, path: string): unknown {
  if (!path.startsWith("$")) throw new ExpressionError(`json path ${path} must start with $`);
  let current = typeof value === "string" ? parseJsonText(value) : value;
  let rest = path.slice(1);
  while (rest.length > 0) {
    const step = PATH_STEP.exec(rest);
    if (!step) throw new ExpressionError(`json path ${path} must select one value (members and indexes only)`);
    const [matched, dotted, index, singleQuoted, doubleQuoted] = step;
    const member = dotted ?? singleQuoted ?? doubleQuoted;
    if (index !== undefined && Array.isArray(current)) current = current[Number(index)];
    else if (member !== undefined && isPlainObject(current) && Object.hasOwn(current, member)) current = current[member];
    else current = undefined;
    if (current === undefined) throw new ExpressionError(`json path ${path} selects no value`);
    rest = rest.slice(matched.length);
  }
  return current;
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ExpressionError("json needs JSON data");
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
