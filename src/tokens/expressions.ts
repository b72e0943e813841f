import { AssertionError, Context, Liquid, type Template, toValueSync, Value } from "liquidjs";
import { TOKENS } from "../limits";
import { ExpressionError } from "./expression-error";
import { registerFilters, textOf } from "./filters";

/**
 * Liquid expressions over token data: search indexes, fingerprint expressions and masks. Tenants
 * write them, so the engine reads no files (no include/render/layout/block), only sees own
 * properties, refuses unknown filters at parse time, and bounds the work of one render.
 */

export { ExpressionError } from "./expression-error";

export const EXPRESSION_MAX_LENGTH = TOKENS.expressionMaxLength;
/** Per render: tags and outputs rendered, and characters or items allocated (ranges, strings). */
const RENDER_LIMITS = { templateLimit: 10_000, memoryLimit: 1_000_000 };
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

registerFilters(engine);

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
    throw new ExpressionError(`could not be evaluated: ${failureOf(error)}`);
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
    throw new ExpressionError(`could not be evaluated: ${failureOf(error)}`);
  }
}

/** Undefined (a missing member) is null in JSON. */
function plainValue(value: unknown): unknown {
  return value === undefined ? null : value;
}

/**
 * Why a render failed: the vault's own messages and the budgets' (both free of data); any other
 * error a filter threw (a standard filter's TypeError) could quote the value, so it is not repeated.
 */
function failureOf(error: unknown): string {
  const original = (error as { originalError?: unknown }).originalError ?? error;
  if (original instanceof ExpressionError || original instanceof AssertionError) return original.message;
  return "a filter failed on this data";
}

/** The original message of a filter's error, not liquidjs's wrapper around it. */
function messageOf(error: unknown): string {
  const original = (error as { originalError?: unknown }).originalError;
  if (original instanceof ExpressionError) return original.message;
  return error instanceof Error ? error.message : String(error);
}
