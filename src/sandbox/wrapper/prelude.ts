/**
 * Evaluated before tenant code: keeps the intrinsics the wrapper relies on, installs the CPU
 * budget check, the allowed-module `require`, and the allocation guards.
 */
import loadBuiltin from "./builtins.js";
import * as errors from "./errors.js";
import limits from "./limits.js";
import {
  ALLOWED_BUILTINS,
  EGRESS_FAILURE_HEADER,
  ERRORS_MODULE,
  MAX_ALLOCATION_BYTES,
  MODULE_NAME_PLACEHOLDER,
  ORIGINAL_ERRORS_MODULE,
  REQUIRE,
  TICK_GLOBAL,
  UNKNOWN_MODULE_MESSAGE,
} from "./vault-values";

/** The runtime's Buffer (nodejs_compat): its allocating methods get the same guard as the constructors. */
declare const Buffer: Record<string, (...args: unknown[]) => unknown>;

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
  /** The runtime's own fetch, before the sandbox's wraps it: what tenant code reaches the network with. */
  fetch: globalThis.fetch,
  TypeError,
  RangeError,
  Error,
});

const CPU_LIMIT_MS = limits.cpuMs;

function define(name: string, value: unknown): void {
  Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
}

// A prototype-free table: tenant code that tampers with String or Array methods cannot widen it.
const BUILTINS: Record<string, string> = Object.create(null);
for (const name of ALLOWED_BUILTINS) {
  BUILTINS[name] = name;
  BUILTINS[`node:${name}`] = name;
}
define(REQUIRE, function require(specifier: unknown) {
  // biome-ignore lint/style/useTemplate: + converts the tenant's value as it always has (valueOf first); a template calls toString
  const text = typeof specifier === "string" ? specifier : "" + specifier;
  if (text === ERRORS_MODULE || text === ORIGINAL_ERRORS_MODULE) return errors;
  const name = BUILTINS[text];
  if (name !== undefined) return loadBuiltin(name);
  throw new intrinsics.Error(UNKNOWN_MODULE_MESSAGE.split(MODULE_NAME_PLACEHOLDER).join(text));
});

/** Thrown at every check once the isolate has been busy too long, until it yields. */
export class CpuLimitError extends Error {}
// Where the clock stands still while code runs (module evaluation here, every request in
// production) the count of checks bounds the slice instead: far more than any CPU does in the limit.
const MAX_TICKS_PER_SLICE = CPU_LIMIT_MS * 250000;
let sliceTicks = 0;
let sliceStart = -1;
let exceeded = false;
export function startSlice(): void {
  sliceTicks = 0;
  sliceStart = -1;
  exceeded = false;
}
function stop(): never {
  exceeded = true;
  throw new CpuLimitError("CPU limit exceeded");
}
define(TICK_GLOBAL, function tick() {
  if (exceeded) throw new CpuLimitError("CPU limit exceeded");
  sliceTicks += 1;
  if (sliceTicks > MAX_TICKS_PER_SLICE) stop();
  if (sliceStart >= 0 && (sliceTicks & 1023) !== 0) return;
  const time = intrinsics.now();
  if (sliceStart < 0) {
    sliceStart = time;
    // The timer fires only once the isolate yields: it ends the busy slice. While the module
    // loads there are no timers; the run that follows starts a fresh slice.
    try {
      intrinsics.setTimeout(startSlice, 0);
    } catch {}
    return;
  }
  if (time - sliceStart > CPU_LIMIT_MS) stop();
});

// A response the egress made because it refused or could not complete the request becomes the
// TypeError a failed fetch throws, with the policy's reason.
const outboundFetch = intrinsics.fetch;
globalThis.fetch = async function fetch(...args: Parameters<typeof outboundFetch>): Promise<Response> {
  const response = await outboundFetch(...args);
  const failure = response.headers.get(EGRESS_FAILURE_HEADER);
  if (failure !== null) throw new intrinsics.TypeError(failure);
  return response;
};

export class AllocationLimitError extends RangeError {}
function refuse(bytes: number): void {
  if (bytes > MAX_ALLOCATION_BYTES) {
    throw new AllocationLimitError(`Allocation of ${bytes} bytes exceeds the sandbox limit of ${MAX_ALLOCATION_BYTES} bytes`);
  }
}
// Captured intrinsics only: tenant code may replace Math, Number or Reflect to skip the check.
const { max, toNumber, apply, construct } = intrinsics;
function lengthOf(value: unknown): number {
  if (typeof value === "number") return value;
  // An ArrayBuffer has no length: a view over an existing buffer allocates nothing new.
  const sized = value as { length?: unknown } | null;
  if (sized !== null && typeof sized === "object" && typeof sized.length === "number") return sized.length;
  return 0;
}

/** The constructors guarded below, which tenant code may also call as functions. */
type Allocator = new (...args: unknown[]) => object;
const globals = globalThis as unknown as Record<string, Allocator>;
function guard(name: string, bytesOf: (args: unknown[]) => number): void {
  const original = globals[name]!;
  const guarded = new Proxy(original, {
    apply(target, self, args) {
      refuse(bytesOf(args));
      return apply(target, self, args);
    },
    construct(target, args, newTarget) {
      refuse(bytesOf(args));
      return construct(target, args, newTarget);
    },
  });
  original.prototype.constructor = guarded;
  globals[name] = guarded;
}
const bufferBytes = (args: unknown[]) =>
  max(toNumber(args[0]) || 0, toNumber((args[1] as { maxByteLength?: unknown } | undefined)?.maxByteLength) || 0);
guard("ArrayBuffer", bufferBytes);
guard("SharedArrayBuffer", bufferBytes);
guard("Array", (args) => (args.length === 1 && typeof args[0] === "number" ? args[0] * 8 : 0));
for (const name of [
  "Int8Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
]) {
  const bytesPerElement = (globals[name] as unknown as Int8ArrayConstructor).BYTES_PER_ELEMENT;
  guard(name, (args) => lengthOf(args[0]) * bytesPerElement);
}
for (const method of ["alloc", "allocUnsafe", "allocUnsafeSlow"]) {
  const original = Buffer[method]!;
  Buffer[method] = function (this: unknown, size: unknown, ...rest: unknown[]) {
    refuse(toNumber(size) || 0);
    return apply(original, this, [size, ...rest]);
  };
}
