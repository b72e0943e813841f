import { JSONPath } from "jsonpath-plus";
import { AssertionError, type Context } from "liquidjs";
import { TOKENS } from "../limits";
import { ExpressionError } from "./errors";

/**
 * `json: '<path>'`: any JSONPath (members, indexes, wildcards, slices, unions, filters, recursive
 * descent) through jsonpath-plus. One match is the value, none is null, several are an error.
 *
 * Tenants write the paths, so two things are bounded. Every step of the walk through the data is
 * charged to the render's memory limit (the data is read through a proxy that counts), so
 * `$..*..*..*` stops like any other runaway expression. And filter and script expressions may read
 * and compare values but not call functions, assign, concatenate or build lists: `@.a.repeat(1e9)`
 * would allocate without bound inside one step.
 */

export const JSON_PATH_MAX_LENGTH = TOKENS.jsonPathMaxLength;
type Budget = Context["memoryLimit"];
type Script = { runInNewContext(context: object): unknown };
type ScriptConstructor = new (code: string) => Script;

// jsonpath-plus's own evaluator (no eval or new Function); wrapped below to refuse unsafe scripts.
const SafeScript = (JSONPath.prototype as unknown as { safeVm: { Script: ScriptConstructor } }).safeVm.Script;

class GuardedScript implements Script {
  private readonly script: Script;

  constructor(code: string) {
    refuseUnsafeScript(code);
    try {
      this.script = new SafeScript(code);
    } catch {
      throw new ExpressionError("json path has a filter expression that does not parse");
    }
  }

  runInNewContext(context: object): unknown {
    return this.script.runInNewContext(context);
  }
}

// jsonpath-plus keeps every path and script it has parsed, without a bound; paths can be computed
// from data, so the caches are emptied after this many distinct paths.
const PATH_CACHE_LIMIT = 1000;
const seenPaths = new Set<string>();

export function selectJsonPath(value: unknown, path: string, budget: Budget): unknown {
  if (path.length > JSON_PATH_MAX_LENGTH) throw new ExpressionError(`json needs a path of at most ${JSON_PATH_MAX_LENGTH} characters`);
  if (!path.trimStart().startsWith("$")) throw new ExpressionError("json needs a path that starts with $");
  // Parsing reads the whole text on each call: charged like any other read of the data.
  if (typeof value === "string") budget.use(value.length);
  const data = typeof value === "string" ? parseJsonText(value) : value;
  // jsonpath-plus does not walk a scalar; only the root path selects one.
  if (data === null || typeof data !== "object") return path.trim() === "$" ? data : null;
  rememberPath(path);
  const meter = new Meter(budget);
  let matches: unknown[];
  try {
    matches = JSONPath({
      path,
      json: meter.watch(data),
      wrap: true,
      eval: GuardedScript,
      // A filter that fails on one element (`@.a.b` where there is no `a`) does not select it.
      ignoreEvalErrors: true,
    }) as unknown[];
  } catch (error) {
    if (error instanceof ExpressionError || error instanceof AssertionError) throw error;
    throw new ExpressionError("json could not evaluate the path");
  }
  meter.settle();
  if (matches.length > 1) throw new ExpressionError(`json path selects ${matches.length} values; it must select one`);
  return matches.length === 0 ? null : meter.original(matches[0]);
}

/** Charges each read of the data to the budget; remembers an overrun a swallowed filter error hid. */
class Meter {
  private readonly originals = new WeakMap<object, object>();
  private overrun: unknown = undefined;

  constructor(private readonly budget: Budget) {}

  watch<T>(value: T): T {
    if (value === null || typeof value !== "object") return value;
    const target = value as object;
    const proxy = new Proxy(target, {
      get: (object, key) => {
        this.charge(1);
        return this.watch(Reflect.get(object, key));
      },
      getOwnPropertyDescriptor: (object, key) => {
        this.charge(1);
        return Reflect.getOwnPropertyDescriptor(object, key);
      },
      ownKeys: (object) => {
        const keys = Reflect.ownKeys(object);
        this.charge(keys.length + 1);
        return keys;
      },
    });
    this.originals.set(proxy, target);
    return proxy as T;
  }

  original(value: unknown): unknown {
    return value !== null && typeof value === "object" ? (this.originals.get(value) ?? value) : value;
  }

  settle(): void {
    if (this.overrun !== undefined) throw this.overrun;
  }

  private charge(count: number): void {
    try {
      this.budget.use(count);
    } catch (error) {
      this.overrun = error;
      throw error;
    }
  }
}

function rememberPath(path: string): void {
  if (seenPaths.has(path)) return;
  if (seenPaths.size >= PATH_CACHE_LIMIT) {
    seenPaths.clear();
    JSONPath.clearCache();
  }
  seenPaths.add(path);
}

// Operands (strings, numbers, names), comparison, logic, arithmetic without +, member access,
// grouping and the conditional. Anything else (=, +, commas, semicolons, braces, backticks) is refused.
const SCRIPT_TOKEN =
  /\s+|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[A-Za-z_$][\w$]*|===|!==|==|!=|<=|>=|&&|\|\||\?\?|[-*/%<>!?:.()[\]&|^~]/y;

function refuseUnsafeScript(code: string): void {
  SCRIPT_TOKEN.lastIndex = 0;
  let afterOperand = false;
  while (SCRIPT_TOKEN.lastIndex < code.length) {
    const token = SCRIPT_TOKEN.exec(code)?.[0];
    if (token === undefined) {
      throw new ExpressionError(
        "json path filters may read, compare and combine values, but not assign, concatenate with + or build lists",
      );
    }
    if (/^\s/.test(token)) continue;
    if (token === "(" && afterOperand) throw new ExpressionError("json path filters may not call functions");
    afterOperand = /^[\w$'"]/.test(token) || token === ")" || token === "]";
  }
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ExpressionError("json needs JSON data");
  }
}
