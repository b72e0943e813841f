/**
 * The one place tenant code (proxy transforms and reactor formulas) runs: in its own isolate, with
 * no bindings, the network only through the egress policy and the vault only through a bridge
 * scoped to one application, under CPU, wall-clock and input-size limits. Two hosts implement the
 * context's ScriptHost port: loader-host.ts (Worker Loader) and dispatch-host.ts (Workers for
 * Platforms); the composition root picks one per deployment (SANDBOX_HOST).
 */
import { ValidationError } from "../errors";
import { CodeProblem, checkCode, MAX_CODE_LENGTH, parseCode } from "./tenant-code";

export { CustomResponseError, ScriptFailedError, ScriptInputTooLargeError, ScriptTimeoutError, TenantError } from "./errors";
export type { ReactorResult, TransformResult } from "./outcome";

/**
 * Accepts code at save time or throws a 400 naming `field`, the line and the column: it must
 * parse, export a function, and use only what the sandbox offers.
 */
export function validateCode(code: string, field: string): void {
  if (code.length > MAX_CODE_LENGTH) {
    throw ValidationError.field(field, `must be at most ${MAX_CODE_LENGTH} characters (it has ${code.length})`);
  }
  try {
    checkCode(parseCode(code));
  } catch (error) {
    if (!(error instanceof CodeProblem)) throw error;
    throw ValidationError.field(field, `line ${error.line}, column ${error.column}: ${error.message}`);
  }
}
