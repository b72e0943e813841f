import { CodeProblem, checkCode, ERRORS_MODULE, instrumentCode, ORIGINAL_ERRORS_MODULE, parseCode } from "./tenant-code";
import type { ScriptLimits, ScriptModule } from "./types";
import { MAIN_MODULE, TENANT_MODULE, WRAPPER_VERSION, wrapperModules } from "./wrapper.generated";

export type { ScriptLimits, ScriptModule } from "./types";
export { MAIN_MODULE, WRAPPER_VERSION };

export const SANDBOX_COMPATIBILITY_DATE = "2025-11-10";
export const SANDBOX_COMPATIBILITY_FLAGS = ["nodejs_compat"];

/**
 * Every module of the hosting script, the main module first: the wrapper (src/sandbox/wrapper/,
 * built into wrapper.generated.ts) with the script's limits, then the modules written for this script.
 */
export function buildScriptModules(code: string, limits: ScriptLimits): ScriptModule[] {
  const parsed = parseCode(code);
  // Checked again here: code saved before a rule was added must not slip past it.
  checkCode(parsed);
  return [
    ...wrapperModules(limits),
    // A re-export, not a copy: both names must yield the same classes for the wrapper's instanceof.
    // Module names resolve like paths, so the specifier climbs out of the alias's "@basis-theory/".
    { name: ORIGINAL_ERRORS_MODULE, format: "esm", source: `export * from ${JSON.stringify(`../${ERRORS_MODULE}`)};\n` },
    { name: TENANT_MODULE, format: parsed.format, source: instrumentCode(code, parsed) },
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
