import { z } from "zod";
import type { ScriptKind } from "../context";
import { utf8 } from "../crypto/encoding";
import type { RevealedValues } from "../errors";
import { jsonDepthOf, MAX_JSON_DEPTH } from "../http/body";
import { isPlainObject } from "../http/json";
import { SANDBOX } from "../limits";
import { CustomResponseError, ScriptFailedError, TENANT_ERRORS, TenantError } from "./errors";

/** Tenant-written messages are returned to the caller; this keeps one from swamping a response. */
const MAX_MESSAGE_LENGTH = SANDBOX.errorMessageMaxLength;
const message = z.string().transform((text) => (text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH)}…` : text));

/**
 * An error's name as the vault repeats it: an identifier, as error classes are named. Tenant code
 * can set any name, so anything else (a value it was handling) is answered as "an error".
 */
const ERROR_NAME = new RegExp(`^[A-Za-z_$][A-Za-z0-9_$]{0,${SANDBOX.errorNameMaxLength - 1}}$`);
const errorName = z.unknown().transform((name) => (typeof name === "string" && ERROR_NAME.test(name) ? name : "an error"));

/** The data of the tokens the run read through `bt`, as JSON: its errors must not repeat it. */
const revealed = z.string().optional();

const OutcomeSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("returned"), json: z.string() }),
  z.object({ kind: z.literal("no-function") }),
  z.object({ kind: z.literal("cpu-limit") }),
  z.object({ kind: z.literal("memory-limit"), message }),
  z.object({ kind: z.literal("invalid-result"), message }),
  z.object({ kind: z.literal("custom-response"), status: z.unknown(), headers: z.unknown(), json: z.string() }),
  z.object({ kind: z.literal("typed-error"), name: errorName, errors: z.record(z.string(), z.array(message)), revealed }),
  // Only the name: the message of an untyped error is not the tenant's answer, and may quote data.
  z.object({ kind: z.literal("threw"), name: errorName, revealed }),
  z.object({ kind: z.literal("refused"), message }),
]);

const HeadersSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));

/** What a transform returns: the body and headers that go on (request) or back (response). */
const TransformResultSchema = z.strictObject({ body: z.unknown().default(null), headers: HeadersSchema });
export type TransformResult = z.output<typeof TransformResultSchema>;

/** What a reactor returns: plaintext output and a payload to tokenize (an object or an array), both optional. */
const ReactorResultSchema = z.strictObject({
  raw: z.unknown().optional(),
  tokenize: z.union([z.array(z.unknown()), z.record(z.string(), z.unknown())]).optional(),
});
export type ReactorResult = z.output<typeof ReactorResultSchema>;
/** 1xx is informational only: the Workers runtime cannot send one as a final response. */
const StatusSchema = z.number().int().min(200).max(599);

/**
 * Turns what the sandbox reported into the script's result, or throws the matching ProblemError.
 * The report comes from the tenant's own isolate, so nothing in it is trusted: each shape is checked.
 */
export function resultOf(kind: ScriptKind, report: unknown, revealedValues: RevealedValues): TransformResult | ReactorResult {
  const parsed = OutcomeSchema.safeParse(report);
  if (!parsed.success) throw new ScriptFailedError(kind, "reported a result the vault cannot read");
  const outcome = parsed.data;
  if ("revealed" in outcome && outcome.revealed !== undefined) revealedValues.add(parseReported(kind, outcome.revealed));
  switch (outcome.kind) {
    case "returned":
      return kind === "reactor"
        ? reactorResult(parseReported(kind, outcome.json))
        : transformResult(kind, parseReported(kind, outcome.json));
    case "no-function":
      throw new ScriptFailedError(kind, "does not export a function (module.exports = async function (req) {…})");
    case "cpu-limit":
      throw new ScriptFailedError(kind, "exceeded its CPU limit and was stopped", "Script Limit Exceeded");
    case "memory-limit":
      throw new ScriptFailedError(kind, `exceeded its memory limit: ${outcome.message}`, "Script Limit Exceeded");
    case "invalid-result":
      throw new ScriptFailedError(kind, outcome.message, "Invalid Script Result");
    case "custom-response":
      throw customResponse(kind, outcome);
    case "typed-error": {
      const known = Object.hasOwn(TENANT_ERRORS, outcome.name) ? TENANT_ERRORS[outcome.name] : undefined;
      if (!known) throw new ScriptFailedError(kind, `threw ${outcome.name}`);
      throw new TenantError(known, outcome.errors);
    }
    case "threw":
      throw new ScriptFailedError(kind, `threw ${outcome.name}`);
    case "refused":
      throw new ScriptFailedError(kind, `could not run: ${outcome.message}`);
  }
}

function transformResult(kind: ScriptKind, value: unknown): TransformResult {
  const expected = "must return {body, headers}";
  if (!isPlainObject(value)) throw invalid(kind, `${expected}, not ${describe(value)}`);
  const unexpected = Object.keys(value).filter((key) => key !== "body" && key !== "headers");
  if (unexpected.length > 0) throw invalid(kind, `${expected}; unexpected ${quoteAll(unexpected)}`);
  if (!("headers" in value)) throw invalid(kind, `${expected}; headers is missing`);
  const result = TransformResultSchema.safeParse(value);
  if (!result.success) throw invalid(kind, `${expected}; headers must be an object of strings`);
  return result.data;
}

function reactorResult(value: unknown): ReactorResult {
  const expected = "must return {raw?, tokenize?}";
  if (!isPlainObject(value)) throw invalid("reactor", `${expected}, not ${describe(value)}`);
  const unexpected = Object.keys(value).filter((key) => key !== "raw" && key !== "tokenize");
  if (unexpected.length > 0) throw invalid("reactor", `${expected}; unexpected ${quoteAll(unexpected)}`);
  const result = ReactorResultSchema.safeParse(value);
  if (!result.success) throw invalid("reactor", `${expected}; tokenize must be an object or an array, not ${describe(value.tokenize)}`);
  return result.data;
}

function customResponse(kind: ScriptKind, outcome: { status: unknown; headers: unknown; json: string }): Error {
  const status = StatusSchema.safeParse(outcome.status);
  if (!status.success) return invalid(kind, "threw CustomHttpResponseError with a status outside 200-599");
  const headers = HeadersSchema.safeParse(outcome.headers ?? {});
  if (!headers.success) return invalid(kind, "threw CustomHttpResponseError whose headers are not an object of strings");
  // Judged here, not when the answer is built: a name or value HTTP does not allow would otherwise throw
  // from the error handler itself. The header is not named, as tenant code chose it.
  if (!httpAllows(headers.data)) return invalid(kind, "threw CustomHttpResponseError with a header HTTP does not allow");
  return new CustomResponseError(status.data, headers.data, parseReported(kind, outcome.json));
}

function httpAllows(headers: Record<string, string>): boolean {
  try {
    new Headers(headers);
    return true;
  } catch {
    return false;
  }
}

/** Also what the wrapper reports when the result overflows its stack while it is serialised. */
export const TOO_DEEP_RESULT = `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels in its result`;

/** The reported JSON, nested no deeper than any body the vault reads: everything after walks it. */
function parseReported(kind: ScriptKind, json: string): unknown {
  if (jsonDepthOf(utf8.encode(json)) > MAX_JSON_DEPTH) throw invalid(kind, TOO_DEEP_RESULT);
  try {
    return JSON.parse(json);
  } catch {
    throw new ScriptFailedError(kind, "reported a result the vault cannot read");
  }
}

function invalid(kind: ScriptKind, detail: string): ScriptFailedError {
  return new ScriptFailedError(kind, detail, "Invalid Script Result");
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function quoteAll(keys: string[]): string {
  return keys.map((key) => `"${key}"`).join(", ");
}
