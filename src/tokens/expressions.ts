import { AssertionError, Context, type FilterImplOptions, Liquid, Output, type Template, toValueSync, Value } from "liquidjs";
import { EXPRESSIONS, TOKENS } from "../limits";
import { BudgetExceededError, ExpressionError } from "./errors";
import { canonicalJson, registerFilters, textOf } from "./filter-registry";

/**
 * Liquid expressions over token data: search indexes, fingerprint expressions, masks, alias ids and
 * detokenization filters. Tenants and public keys write them, so an expression is output markup
 * (`{{ … }}` with filters) and literal text only: the engine has no tags at all (no loops, no
 * assignments, no files), sees only own properties, refuses unknown filters at parse time, and
 * each evaluation runs on a budget of filter calls and of output relative to its input. What the
 * filters read and allocate is charged to a work budget that all the evaluations of one token (or
 * of one request's detokenization) share, in proportion to the data.
 */

export const EXPRESSION_MAX_LENGTH = TOKENS.expressionMaxLength;
const RENDER_OPTIONS = { sync: true };

export interface ExpressionScope {
  data: unknown;
  metadata?: Record<string, string>;
}

const engine = new Liquid({
  strictFilters: true,
  ownPropertyOnly: true,
  templates: {},
  parseLimit: EXPRESSION_MAX_LENGTH,
  // Objects and arrays render as canonical JSON rather than "[object Object]"; every output is charged.
  outputEscape(this: { context: Context }, value: unknown) {
    const text = textOf(value);
    budgetOf(this.context).chargeOutput(text.length);
    return text;
  },
});
for (const tag of Object.keys(engine.tags)) delete engine.tags[tag];
registerFilters(engine);
// `raw` would skip the output escape, and with it the output's charge; `sample` shuffles its input
// (a fingerprint must not be random) and costs more per character than any other filter.
delete engine.filters.raw;
delete engine.filters.sample;
// These evaluate an expression per element, and that expression sees the whole scope: one call of
// `where_exp: "a", "data contains 'x'"` reads the whole array once per element.
for (const name of ["where_exp", "reject_exp", "group_by_exp", "has_exp", "find_exp", "find_index_exp"]) delete engine.filters[name];
for (const [name, filter] of Object.entries(engine.filters)) engine.registerFilter(name, counted(filter));

/**
 * Every filter call is charged to the evaluation's budget before it runs, and the text it returns to
 * the render's memory limit: some of Liquid's filters (url_encode, slugify, stringify …) charge
 * nothing themselves, and url_encode triples every `%`, so a chain of them could grow without bound.
 */
function counted(filter: FilterImplOptions): FilterImplOptions {
  const handler = typeof filter === "function" ? filter : filter.handler;
  const charged = function (this: { context: Context }, ...args: unknown[]) {
    budgetOf(this.context).chargeFilterCall();
    const result = handler.apply(this as never, args as never);
    if (typeof result === "string") this.context.memoryLimit.use(result.length);
    return result;
  };
  return typeof filter === "function" ? charged : { ...filter, handler: charged };
}

/**
 * What one evaluation may spend: filter calls, and characters of output in proportion to the size
 * of its input. A mask's leaves share one budget.
 */
class Budget {
  private filterCalls = 0;
  private output = 0;
  private readonly maxOutput: number;

  constructor(inputSize: number) {
    this.maxOutput = EXPRESSIONS.outputBaseCharacters + EXPRESSIONS.outputPerInputCharacter * inputSize;
  }

  chargeFilterCall(): void {
    if (++this.filterCalls > EXPRESSIONS.maxFilterCalls) {
      throw new BudgetExceededError(`calls more than ${EXPRESSIONS.maxFilterCalls} filters in one evaluation`);
    }
  }

  chargeOutput(characters: number): void {
    this.output += characters;
    if (this.output > this.maxOutput) {
      throw new BudgetExceededError(`writes more output than its budget (${this.maxOutput} characters for this data)`);
    }
  }
}

/**
 * The characters the filters of several evaluations may read and allocate together (liquidjs's
 * memory limit, which its filters charge; this module charges every filter's text result and the
 * json filter the text it parses): all the expressions of one token, or one request's
 * detokenization, share one, so their work is linear in the data however many there are.
 */
export class WorkBudget {
  private used = 0;
  private readonly limit: number;

  constructor(inputSize: number) {
    this.limit = EXPRESSIONS.workBaseCharacters + EXPRESSIONS.workPerInputCharacter * inputSize;
  }

  /** The budget for expressions over this data. */
  static of(data: unknown): WorkBudget {
    return new WorkBudget(sizeOf(data));
  }

  /** liquidjs's Limiter: charges `count` characters. */
  use(count: number): void {
    if (!(+count > 0)) return;
    this.used += +count;
    if (this.used > this.limit) {
      throw new BudgetExceededError(`reads and writes more than its budget (${this.limit} characters for this data)`);
    }
  }

  /** liquidjs's Limiter: whether `count` characters could be charged at all. */
  check(count: number): void {
    if (+count > this.limit)
      throw new BudgetExceededError(`reads and writes more than its budget (${this.limit} characters for this data)`);
  }
}

const budgets = new WeakMap<Context, Budget>();

function budgetOf(context: Context): Budget {
  const budget = budgets.get(context);
  if (!budget) throw new Error("an expression was evaluated outside an Evaluation");
  return budget;
}

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
    throw new ExpressionError(`is not a valid expression: ${parseFailureOf(error)}`);
  }
  const filters = template.reduce((sum, part) => sum + (part instanceof Output ? part.value.filters.length - 1 : 0), 0);
  if (filters > EXPRESSIONS.maxFilterCalls) {
    throw new ExpressionError(`has ${filters} filters; an expression may call at most ${EXPRESSIONS.maxFilterCalls}`);
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

const WHOLE_OUTPUT = /^\s*\{\{(?!-)([\s\S]*?)(?<!-)\}\}\s*$/;
const values = new Map<string, Value>();

/**
 * One evaluation over one scope: every expression it renders shares one budget of filter calls and
 * output (the leaves of an object mask are one evaluation).
 */
export class Evaluation {
  private readonly context: Context;

  /** `work` is shared with the other evaluations of the same token or request, when there are any. */
  constructor(scope: ExpressionScope, work: WorkBudget = WorkBudget.of(scope.data)) {
    // liquidjs calls only use() and check() of its memory limiter, which WorkBudget implements.
    const memoryLimit = work as unknown as Context["memoryLimit"];
    this.context = new Context(scope, engine.options, RENDER_OPTIONS, { liquid: engine, memoryLimit });
    budgets.set(this.context, new Budget(sizeOf(scope.data)));
  }

  /** The source rendered to text. */
  text(source: string): string {
    const template = compileExpression(source);
    try {
      return String(engine.renderSync(template, this.context));
    } catch (error) {
      throw evaluationFailure(error);
    }
  }

  /**
   * Like text, but a source that is exactly one output (`{{ data.month }}`, with filters) gives the
   * value itself, with its JSON type (a number stays a number, an object an object); any other
   * source renders to a string. Object masks and detokenization use this.
   */
  value(source: string): unknown {
    const whole = WHOLE_OUTPUT.exec(source);
    if (!whole || whole[1]!.includes("{{") || whole[1]!.includes("}}")) return this.text(source);
    compileExpression(source);
    let value = values.get(source);
    if (!value) {
      value = new Value(whole[1]!, engine);
      if (values.size >= CACHE_LIMIT) values.delete(values.keys().next().value as string);
      values.set(source, value);
    }
    try {
      const result = plainValue(toValueSync(value.value(this.context)));
      budgetOf(this.context).chargeOutput(typeof result === "string" ? result.length : sizeOf(result));
      return result;
    } catch (error) {
      throw evaluationFailure(error);
    }
  }
}

/** The source rendered over the scope, as one evaluation. */
export function evaluateExpression(source: string, scope: ExpressionScope, work?: WorkBudget): string {
  return new Evaluation(scope, work).text(source);
}

/** Characters of a value as text; objects are measured once however often an evaluation meets them. */
const measured = new WeakMap<object, number>();

function sizeOf(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (value === null || typeof value !== "object") return textOf(value).length;
  let size = measured.get(value);
  if (size === undefined) {
    size = canonicalJson(value).length;
    measured.set(value, size);
  }
  return size;
}

/** Undefined (a missing member) is null in JSON. */
function plainValue(value: unknown): unknown {
  return value === undefined ? null : value;
}

/**
 * Why a render failed: the vault's own messages and the budgets' (both free of data); any other
 * error a filter threw (a standard filter's TypeError) could quote the value, so it is not repeated.
 * liquidjs's own limits (memory) fail its assertions: a budget too.
 */
function evaluationFailure(error: unknown): ExpressionError {
  const original = (error as { originalError?: unknown }).originalError ?? error;
  if (original instanceof BudgetExceededError || original instanceof AssertionError) {
    return new BudgetExceededError(`could not be evaluated: ${original.message}`);
  }
  if (original instanceof ExpressionError) return new ExpressionError(`could not be evaluated: ${original.message}`);
  return new ExpressionError("could not be evaluated: a filter failed on this data");
}

const UNKNOWN_TAG = /tag "([^"]*)" not found/;

/** The original message of a filter's error, not liquidjs's wrapper; a tag is named as not allowed. */
function parseFailureOf(error: unknown): string {
  const original = (error as { originalError?: unknown }).originalError;
  if (original instanceof ExpressionError) return original.message;
  const message = error instanceof Error ? error.message : String(error);
  const tag = UNKNOWN_TAG.exec(message);
  if (tag) return `Liquid tags such as {% ${tag[1]} %} are not allowed; an expression holds only {{ … }} outputs and literal text`;
  return message;
}
