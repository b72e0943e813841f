import {
  ALLOWED_BUILTINS,
  ERRORS_MODULE,
  instrumentCode,
  ORIGINAL_ERRORS_MODULE,
  parseCode,
  REQUIRE,
  TICK_GLOBAL,
  checkCode,
  CodeProblem,
  unknownModuleMessage,
  type ModuleFormat,
} from "./tenant-code";
import { EGRESS_FAILURE_HEADER } from "../egress/entrypoint";
import { TOO_DEEP_RESULT } from "./outcome";

/**
 * The worker script that hosts tenant code, as modules. Bump the version whenever these sources
 * change: it is part of every isolate id and published script, so old isolates are not reused.
 */
export const WRAPPER_VERSION = "7";
export const SANDBOX_COMPATIBILITY_DATE = "2025-11-10";
export const SANDBOX_COMPATIBILITY_FLAGS = ["nodejs_compat"];
export const MAIN_MODULE = "sandbox.js";

/** Production isolates are limited to 128 MB; one allocation may not claim more than that. */
const MAX_ALLOCATION_BYTES = 128 * 1024 * 1024;

export interface ScriptModule {
  name: string;
  format: ModuleFormat;
  source: string;
}

/** Limits baked into the script when it is built. */
export interface ScriptLimits {
  /** Longest the isolate may stay busy without yielding before tenant code is stopped. */
  cpuMs: number;
}

/** Every module of the hosting script, the main module first. */
export function buildScriptModules(code: string, limits: ScriptLimits): ScriptModule[] {
  const parsed = parseCode(code);
  // Checked again here: code saved before a rule was added must not slip past it.
  checkCode(parsed);
  return [
    { name: MAIN_MODULE, format: "esm", source: WRAPPER_SOURCE },
    { name: "prelude.js", format: "esm", source: preludeSource(limits) },
    { name: "builtins.js", format: "commonjs", source: BUILTINS_SOURCE },
    { name: ERRORS_MODULE, format: "esm", source: ERRORS_SOURCE },
    // A re-export, not a copy: both names must yield the same classes for the wrapper's instanceof.
    // Module names resolve like paths, so the specifier climbs out of the alias's "@basis-theory/".
    { name: ORIGINAL_ERRORS_MODULE, format: "esm", source: `export * from ${JSON.stringify(`../${ERRORS_MODULE}`)};\n` },
    { name: "tenant.js", format: parsed.format, source: instrumentCode(code, parsed) },
  ];
}

/**
 * The modules for a Worker Loader isolate. Code the checks refuse (saved before a rule was added)
 * gets one module that reports the refusal as its outcome: an exception thrown while the runtime
 * builds an isolate is logged by the runtime as uncaught, even though the run fails cleanly.
 */
export function loaderScriptModules(code: string, limits: ScriptLimits): ScriptModule[] {
  try {
    return buildScriptModules(code, limits);
  } catch (error) {
    if (!(error instanceof CodeProblem)) throw error;
    const outcome = { kind: "refused", message: `line ${error.line}, column ${error.column}: ${error.message}` };
    const source = `import { WorkerEntrypoint } from "cloudflare:workers";
export default class Refused extends WorkerEntrypoint {
  run() { return ${JSON.stringify(outcome)}; }
}
`;
    return [{ name: MAIN_MODULE, format: "esm", source }];
  }
}

/**
 * Evaluated before tenant code: keeps the intrinsics the wrapper relies on, installs the CPU
 * budget check, the allowed-module `require`, and the allocation guards.
 */
function preludeSource({ cpuMs }: ScriptLimits): string {
  return `import loadBuiltin from "./builtins.js";
import * as errors from ${JSON.stringify(ERRORS_MODULE)};

export const intrinsics = Object.freeze({
  stringify: JSON.stringify,
  parse: JSON.parse,
  freeze: Object.freeze,
  setTimeout: globalThis.setTimeout.bind(globalThis),
  now: performance.now.bind(performance),
  max: Math.max,
  toNumber: Number,
  apply: Reflect.apply,
  construct: Reflect.construct,
  TypeError,
  RangeError,
  Error,
});

const CPU_LIMIT_MS = ${cpuMs};
const MAX_ALLOCATION_BYTES = ${MAX_ALLOCATION_BYTES};

function define(name, value) {
  Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
}

// A prototype-free table: tenant code that tampers with String or Array methods cannot widen it.
const BUILTINS = Object.create(null);
for (const name of ${JSON.stringify(ALLOWED_BUILTINS)}) {
  BUILTINS[name] = name;
  BUILTINS["node:" + name] = name;
}
const UNKNOWN_MODULE = ${JSON.stringify(unknownModuleMessage("\u0000"))};
define(${JSON.stringify(REQUIRE)}, function require(specifier) {
  const text = typeof specifier === "string" ? specifier : "" + specifier;
  if (text === ${JSON.stringify(ERRORS_MODULE)} || text === ${JSON.stringify(ORIGINAL_ERRORS_MODULE)}) return errors;
  const name = BUILTINS[text];
  if (name !== undefined) return loadBuiltin(name);
  throw new intrinsics.Error(UNKNOWN_MODULE.split("\\u0000").join(text));
});

/** Thrown at every check once the isolate has been busy too long, until it yields. */
export class CpuLimitError extends Error {}
// Where the clock stands still while code runs (module evaluation here, every request in
// production) the count of checks bounds the slice instead: far more than any CPU does in the limit.
const MAX_TICKS_PER_SLICE = CPU_LIMIT_MS * 250000;
let sliceTicks = 0;
let sliceStart = -1;
let exceeded = false;
export function startSlice() {
  sliceTicks = 0;
  sliceStart = -1;
  exceeded = false;
}
function stop() {
  exceeded = true;
  throw new CpuLimitError("CPU limit exceeded");
}
define(${JSON.stringify(TICK_GLOBAL)}, function tick() {
  if (exceeded) throw new CpuLimitError("CPU limit exceeded");
  sliceTicks += 1;
  if (sliceTicks > MAX_TICKS_PER_SLICE) stop();
  if (sliceStart >= 0 && (sliceTicks & 1023) !== 0) return;
  const time = intrinsics.now();
  if (sliceStart < 0) {
    sliceStart = time;
    // The timer fires only once the isolate yields: it ends the busy slice. While the module
    // loads there are no timers; the run that follows starts a fresh slice.
    try { intrinsics.setTimeout(startSlice, 0); } catch {}
    return;
  }
  if (time - sliceStart > CPU_LIMIT_MS) stop();
});

// A response the egress made because it refused or could not complete the request becomes the
// TypeError a failed fetch throws, with the policy's reason.
const outboundFetch = globalThis.fetch;
globalThis.fetch = async function fetch(...args) {
  const response = await outboundFetch(...args);
  const failure = response.headers.get(${JSON.stringify(EGRESS_FAILURE_HEADER)});
  if (failure !== null) throw new intrinsics.TypeError(failure);
  return response;
};

export class AllocationLimitError extends RangeError {}
function refuse(bytes) {
  if (bytes > MAX_ALLOCATION_BYTES) {
    throw new AllocationLimitError("Allocation of " + bytes + " bytes exceeds the sandbox limit of " + MAX_ALLOCATION_BYTES + " bytes");
  }
}
// Captured intrinsics only: tenant code may replace Math, Number or Reflect to skip the check.
const { max, toNumber, apply, construct } = intrinsics;
function lengthOf(value) {
  if (typeof value === "number") return value;
  // An ArrayBuffer has no length: a view over an existing buffer allocates nothing new.
  if (value !== null && typeof value === "object" && typeof value.length === "number") return value.length;
  return 0;
}
function guard(name, bytesOf) {
  const original = globalThis[name];
  const guarded = new Proxy(original, {
    apply(target, self, args) { refuse(bytesOf(args)); return apply(target, self, args); },
    construct(target, args, newTarget) { refuse(bytesOf(args)); return construct(target, args, newTarget); },
  });
  original.prototype.constructor = guarded;
  globalThis[name] = guarded;
}
const bufferBytes = (args) => max(toNumber(args[0]) || 0, toNumber(args[1]?.maxByteLength) || 0);
guard("ArrayBuffer", bufferBytes);
guard("SharedArrayBuffer", bufferBytes);
guard("Array", (args) => (args.length === 1 && typeof args[0] === "number" ? args[0] * 8 : 0));
for (const name of ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
  "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]) {
  const bytesPerElement = globalThis[name].BYTES_PER_ELEMENT;
  guard(name, (args) => lengthOf(args[0]) * bytesPerElement);
}
for (const method of ["alloc", "allocUnsafe", "allocUnsafeSlow"]) {
  const original = Buffer[method];
  Buffer[method] = function (size, ...rest) {
    refuse(toNumber(size) || 0);
    return apply(original, this, [size, ...rest]);
  };
}
`;
}

/** Node built-ins load on first require: a script that needs none starts faster. */
const BUILTINS_SOURCE = `module.exports = (name) => require("node:" + name);\n`;

/** The errors tenant code may throw (and the error a failed `bt` call throws). */
const ERRORS_SOURCE = `
function errorsOf(detail) {
  if (typeof detail === "string") return { error: [detail] };
  if (Array.isArray(detail)) return { error: detail.map(String) };
  if (detail instanceof Error) return { error: [detail.message] };
  if (detail !== null && typeof detail === "object") {
    return Object.fromEntries(Object.entries(detail).map(([key, value]) => [key, Array.isArray(value) ? value.map(String) : [String(value)]]));
  }
  return { error: [String(detail)] };
}

class ScriptError extends Error {
  constructor(name, detail, fallback) {
    const errors = errorsOf(detail ?? fallback);
    super(Object.values(errors).flat().join("; "));
    this.name = name;
    this.errors = errors;
  }
}

export class AuthenticationError extends ScriptError { constructor(detail) { super("AuthenticationError", detail, "Authentication failed"); } }
export class AuthorizationError extends ScriptError { constructor(detail) { super("AuthorizationError", detail, "Not authorized"); } }
export class BadRequestError extends ScriptError { constructor(detail) { super("BadRequestError", detail, "Bad request"); } }
export class InvalidPaymentMethodError extends ScriptError { constructor(detail) { super("InvalidPaymentMethodError", detail, "Invalid payment method"); } }
export class InvalidReactorConfigurationError extends ScriptError { constructor(detail) { super("InvalidReactorConfigurationError", detail, "Invalid reactor configuration"); } }
export class RateLimitError extends ScriptError { constructor(detail) { super("RateLimitError", detail, "Rate limit exceeded"); } }
export class ReactorRuntimeError extends ScriptError { constructor(detail) { super("ReactorRuntimeError", detail, "Reactor runtime error"); } }
export class ServiceUnavailableError extends ScriptError { constructor(detail) { super("ServiceUnavailableError", detail, "Service unavailable"); } }

export class CustomHttpResponseError extends Error {
  constructor({ status, headers = {}, body } = {}) {
    super("Custom HTTP response " + status);
    this.name = "CustomHttpResponseError";
    this.status = status;
    this.headers = headers;
    this.body = body;
  }
}

/** A failed \`bt\` call: the vault's problem details. */
export class ApiError extends Error {
  constructor(problem) {
    super(problem.detail + " (" + problem.status + ")");
    this.name = "ApiError";
    this.status = problem.status;
    this.title = problem.title;
    this.errors = problem.errors;
  }
}

export { ScriptError };
`;

/**
 * The entrypoint: runs the tenant's function on the input and reports one outcome as plain data.
 * The vault trusts none of it: it validates every outcome again on its side.
 */
const WRAPPER_SOURCE = `
import { intrinsics, startSlice, CpuLimitError, AllocationLimitError } from "./prelude.js";
import { WorkerEntrypoint } from "cloudflare:workers";
import * as errors from ${JSON.stringify(ERRORS_MODULE)};
import exported from "./tenant.js";

const { stringify, parse, freeze } = intrinsics;

class InvalidResultError extends intrinsics.Error {}

function handlerOf(value) {
  if (typeof value === "function") return value;
  if (value !== null && typeof value === "object" && typeof value.default === "function") return value.default;
  return null;
}

// Arguments cross as JSON text, like a request body: the vault bounds it before it parses it.
function argumentText(value) {
  return stringify(value === undefined ? null : value);
}

function clientFor(bridge) {
  const call = async (method, args) => {
    const reply = await bridge[method](...args.map(argumentText));
    if (reply.ok) return reply.value;
    throw new errors.ApiError(reply.problem);
  };
  return freeze({
    tokenize: (...args) => call("tokenize", args),
    tokens: freeze({
      create: (...args) => call("createToken", args),
      retrieve: (...args) => call("getToken", args),
      update: (...args) => call("updateToken", args),
      delete: (...args) => call("deleteToken", args),
      search: (...args) => call("searchTokens", args),
    }),
  });
}

function where(key) {
  return key === "" ? "" : " at \\"" + key + "\\"";
}

function toJson(value) {
  try {
    return stringify(value === undefined ? null : value, (key, item) => {
      if (typeof item === "function") throw new InvalidResultError("returned a function" + where(key) + ", which cannot be sent as JSON");
      if (typeof item === "symbol") throw new InvalidResultError("returned a symbol" + where(key) + ", which cannot be sent as JSON");
      if (typeof item === "bigint") throw new InvalidResultError("returned a BigInt" + where(key) + ": convert it to a string or a number");
      return item;
    });
  } catch (error) {
    if (error instanceof InvalidResultError) throw error;
    if (error instanceof intrinsics.TypeError && /circular/i.test(error.message)) {
      throw new InvalidResultError("returned a cyclic object, which cannot be sent as JSON");
    }
    // Serialising recurses: a value nested thousands of levels deep overflows the stack first.
    if (error instanceof intrinsics.RangeError && /call stack/i.test(error.message)) {
      throw new InvalidResultError(${JSON.stringify(TOO_DEEP_RESULT)});
    }
    throw error;
  }
}

function messageOf(error) {
  try {
    if (error instanceof Error) return error.name + ": " + error.message;
    return String(error);
  } catch {
    return "a value that cannot be described";
  }
}

function outcomeOf(error) {
  if (error instanceof CpuLimitError) return { kind: "cpu-limit" };
  if (error instanceof AllocationLimitError) return { kind: "memory-limit", message: error.message };
  if (error instanceof InvalidResultError) return { kind: "invalid-result", message: error.message };
  if (error instanceof errors.CustomHttpResponseError) {
    return { kind: "custom-response", status: error.status, headers: error.headers, json: toJson(error.body) };
  }
  if (error instanceof errors.ScriptError) return { kind: "typed-error", name: error.name, errors: error.errors };
  return { kind: "threw", message: messageOf(error) };
}

export default class Sandbox extends WorkerEntrypoint {
  async run(inputJson, bridge) {
    startSlice();
    try {
      const handler = handlerOf(exported);
      if (handler === null) return { kind: "no-function" };
      const input = parse(inputJson);
      const req = { args: input.args, configuration: input.configuration };
      const capability = bridge ?? this.env.BRIDGE;
      if (capability) req.bt = clientFor(capability);
      return { kind: "returned", json: toJson(await handler(req)) };
    } catch (error) {
      try {
        return outcomeOf(error);
      } catch (reportError) {
        return outcomeOf(reportError);
      }
    }
  }
}
`;
