/**
 * The entrypoint: runs the tenant's function on the input and reports one outcome as plain data.
 * The vault trusts none of it: it validates every outcome again on its side (outcome.ts).
 *
 * The modules here become the isolate's modules as they are: scripts/build-sandbox-wrapper.mjs
 * builds each into src/sandbox/wrapper.generated.ts, and worker-script.ts adds the tenant's.
 */
// biome-ignore assist/source/organizeImports: the prelude must be evaluated first, before tenant code above all
import { AllocationLimitError, CpuLimitError, intrinsics, startSlice } from "./prelude.js";
import { WorkerEntrypoint } from "cloudflare:workers";
import type { BridgeMethod, BridgeReply } from "../bridge-protocol";
import * as errors from "./errors.js";
import exported from "./tenant.js";
import { TOO_DEEP_RESULT } from "./vault-values";

/** The bridge as the isolate holds it: each method takes its arguments as JSON text. */
type BridgeCapability = Record<BridgeMethod, (...argumentTexts: string[]) => Promise<BridgeReply>>;

type Handler = (req: unknown) => unknown;

const { stringify, parse, freeze } = intrinsics;

class InvalidResultError extends intrinsics.Error {}

function handlerOf(value: unknown): Handler | null {
  if (typeof value === "function") return value as Handler;
  if (value !== null && typeof value === "object" && typeof (value as { default?: unknown }).default === "function") {
    return (value as { default: Handler }).default;
  }
  return null;
}

// Arguments cross as JSON text, like a request body: the vault bounds it before it parses it.
function argumentText(value: unknown): string {
  return stringify(value === undefined ? null : value);
}

/**
 * The data of every token in a bridge reply (a token, a search page, a tokenize result): the vault
 * keeps it out of the messages this run's errors carry (the vault redacts; the wrapper only tells).
 */
function collectTokenData(value: unknown, revealed: unknown[]): void {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (const item of value) collectTokenData(item, revealed);
    return;
  }
  const members = value as Record<string, unknown>;
  const isToken = "id" in members && "data" in members;
  if (isToken) revealed.push(members.data);
  for (const [key, item] of Object.entries(members)) if (!(isToken && key === "data")) collectTokenData(item, revealed);
}

function clientFor(bridge: BridgeCapability, revealed: unknown[]) {
  const call = async (method: BridgeMethod, args: unknown[]) => {
    const reply = await bridge[method](...args.map(argumentText));
    if (reply.ok) {
      collectTokenData(reply.value, revealed);
      return reply.value;
    }
    throw new errors.ApiError(reply.problem);
  };
  return freeze({
    tokenize: (...args: unknown[]) => call("tokenize", args),
    tokens: freeze({
      create: (...args: unknown[]) => call("createToken", args),
      retrieve: (...args: unknown[]) => call("getToken", args),
      update: (...args: unknown[]) => call("updateToken", args),
      delete: (...args: unknown[]) => call("deleteToken", args),
      search: (...args: unknown[]) => call("searchTokens", args),
    }),
  });
}

function where(key: string): string {
  return key === "" ? "" : ` at "${key}"`;
}

function toJson(value: unknown): string {
  try {
    return stringify(value === undefined ? null : value, (key, item) => {
      if (typeof item === "function") throw new InvalidResultError(`returned a function${where(key)}, which cannot be sent as JSON`);
      if (typeof item === "symbol") throw new InvalidResultError(`returned a symbol${where(key)}, which cannot be sent as JSON`);
      if (typeof item === "bigint") throw new InvalidResultError(`returned a BigInt${where(key)}: convert it to a string or a number`);
      return item;
    });
  } catch (error) {
    if (error instanceof InvalidResultError) throw error;
    if (error instanceof intrinsics.TypeError && /circular/i.test(error.message)) {
      throw new InvalidResultError("returned a cyclic object, which cannot be sent as JSON");
    }
    // Serialising recurses: a value nested thousands of levels deep overflows the stack first.
    if (error instanceof intrinsics.RangeError && /call stack/i.test(error.message)) {
      throw new InvalidResultError(TOO_DEEP_RESULT);
    }
    throw error;
  }
}

/**
 * Only the name of an untyped error: its message can quote data the code was handling (JSON.parse
 * quotes its input), and whoever reads the error (an open proxy's caller, the log) may not see it.
 */
function nameOf(error: unknown): string | undefined {
  try {
    if (!(error instanceof intrinsics.Error)) return undefined;
    const { name } = error;
    return typeof name === "string" ? name : undefined;
  } catch {
    return undefined;
  }
}

function outcomeOf(error: unknown) {
  if (error instanceof CpuLimitError) return { kind: "cpu-limit" };
  if (error instanceof AllocationLimitError) return { kind: "memory-limit", message: error.message };
  if (error instanceof InvalidResultError) return { kind: "invalid-result", message: error.message };
  if (error instanceof errors.CustomHttpResponseError) {
    return { kind: "custom-response", status: error.status, headers: error.headers, json: toJson(error.body) };
  }
  if (error instanceof errors.ScriptError) return { kind: "typed-error", name: error.name, errors: error.errors };
  return { kind: "threw", name: nameOf(error) };
}

/** What the tenant's function is called with. */
interface TenantRequest {
  args: unknown;
  configuration: unknown;
  bt?: ReturnType<typeof clientFor>;
}

export default class Sandbox extends WorkerEntrypoint<{ BRIDGE?: BridgeCapability }> {
  async run(inputJson: string, bridge: BridgeCapability | null) {
    startSlice();
    const revealed: unknown[] = [];
    try {
      const handler = handlerOf(exported);
      if (handler === null) return { kind: "no-function" };
      const input = parse(inputJson);
      const req: TenantRequest = { args: input.args, configuration: input.configuration };
      const capability = bridge ?? this.env.BRIDGE;
      if (capability) req.bt = clientFor(capability, revealed);
      return { kind: "returned", json: toJson(await handler(req)) };
    } catch (error) {
      let outcome: Record<string, unknown>;
      try {
        outcome = outcomeOf(error);
      } catch (reportError) {
        // A getter of the tenant's error threw: report that error, or at least that something was thrown.
        try {
          outcome = outcomeOf(reportError);
        } catch {
          outcome = { kind: "threw" };
        }
      }
      return revealed.length > 0 ? { ...outcome, revealed: stringify(revealed) } : outcome;
    }
  }

  /**
   * The text `url` answers with, or null when the request fails: the dispatch host's check that
   * an outbound worker carries this isolate's fetches. No tenant function is called.
   */
  async checkEgress(url: string): Promise<string | null> {
    const { fetch } = intrinsics;
    try {
      const response = await fetch(url);
      return response.ok ? await response.text() : null;
    } catch {
      return null;
    }
  }
}
