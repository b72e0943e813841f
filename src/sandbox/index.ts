/**
 * The one place tenant code (proxy transforms and reactor formulas) runs: in its own isolate, with
 * no bindings, the network only through the egress policy and the vault only through a bridge
 * scoped to one application, under CPU, wall-clock and input-size limits.
 */
import { exports } from "cloudflare:workers";
import type { Principal } from "../auth/access";
import { utf8 } from "../crypto/encoding";
import { type SignedProps, signProps } from "../crypto/entrypoint-props";
import { Keyring } from "../crypto/keyring";
import type { Bindings, Config } from "../env";
import { ConfigurationError, type RevealedValues, ValidationError } from "../errors";
import { SANDBOX } from "../limits";
import type { BridgeProps } from "./bridge";
import { deleteScript, dispatchEntrypoint, uploadScript } from "./dispatch-host";
import { ScriptFailedError, ScriptInputTooLargeError, ScriptTimeoutError } from "./errors";
import { loaderEntrypoint } from "./loader-host";
import { type ReactorResult, resultOf, type TransformResult } from "./outcome";
import { CodeProblem, checkCode, MAX_CODE_LENGTH, parseCode } from "./tenant-code";
import type { ScriptOwner, ScriptRequest } from "./types";

export { CustomResponseError, ScriptFailedError, ScriptTimeoutError, TenantError } from "./errors";
export type { ReactorResult, TransformResult } from "./outcome";
export type { ScriptKind, ScriptOwner, ScriptRequest } from "./types";

/** Largest input (args and configuration, as JSON) a script may be given. */
export const MAX_INPUT_BYTES = SANDBOX.inputMaxBytes;

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

/**
 * Where tenant code runs for one tenant's request: the Worker Loader locally, a Workers for Platforms
 * dispatch namespace in production (SANDBOX_HOST).
 */
export class Sandbox {
  constructor(
    private readonly env: Bindings,
    private readonly config: Config,
    /** The request's revealed values: what tenant code read through `bt` joins them. */
    private readonly revealed: RevealedValues,
  ) {}

  /** Makes the script runnable where the host needs it ahead of time (the dispatch namespace). */
  async publish(owner: ScriptOwner, code: string): Promise<void> {
    if (this.config.SANDBOX_HOST === "dispatch") await uploadScript(this.config, owner, code);
  }

  async unpublish(owner: ScriptOwner): Promise<void> {
    if (this.config.SANDBOX_HOST === "dispatch") await deleteScript(this.config, owner);
  }

  /** Runs the script on the input and returns its result, checked against the kind's contract. */
  async run(request: ScriptRequest): Promise<TransformResult | ReactorResult> {
    const { env, config } = this;
    const { owner } = request;
    const inputJson = JSON.stringify(request.input);
    if (utf8.encode(inputJson).byteLength > MAX_INPUT_BYTES) throw new ScriptInputTooLargeError(owner.kind, MAX_INPUT_BYTES);

    const bridge = request.application ? await bridgeFor(config, request.application) : null;
    // Awaited rather than returned: workerd reports a rejection adopted one microtask late as unhandled.
    const run = async () => {
      if (config.SANDBOX_HOST === "dispatch") {
        const dispatched = await dispatchEntrypoint(env, config, owner);
        return await dispatched.run(inputJson, bridge?.capability ?? null);
      }
      const loaded = await loaderEntrypoint(env, config, owner, request.code, bridge);
      return await loaded.run(inputJson, null);
    };
    const report = await withinWallClock(owner, config.SANDBOX_WALL_TIME_MS, run);
    return resultOf(owner.kind, report, this.revealed);
  }
}

interface BridgeEntrypoints {
  Bridge(options: { props: SignedProps<BridgeProps> }): Fetcher;
}

/** The capability `bt` uses: its props, set and signed here and never by tenant code, decide the principal. */
async function bridgeFor(config: Config, application: Principal): Promise<{ applicationId: string; capability: Fetcher }> {
  const props = await signProps<BridgeProps>(Keyring.of(config.keyring), "Bridge", {
    tenantId: application.tenantId,
    applicationId: application.applicationId,
  });
  return { applicationId: application.applicationId, capability: (exports as unknown as BridgeEntrypoints).Bridge({ props }) };
}

async function withinWallClock(owner: ScriptOwner, limitMs: number, run: () => Promise<unknown>): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ScriptTimeoutError(owner.kind, limitMs)), limitMs);
  });
  const settled = (async () => {
    try {
      return await run();
    } catch (error) {
      throw runtimeFailure(owner, error);
    }
  })();
  try {
    return await Promise.race([settled, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The runtime itself ended the run: the script failed to load, hung, or its isolate was stopped. */
function runtimeFailure(owner: ScriptOwner, error: unknown): Error {
  // The host's configuration, not the script, is at fault: the operator must see which setting.
  if (error instanceof ConfigurationError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (message.includes("hung and would never generate a response")) {
    return new ScriptFailedError(owner.kind, "never settled its result (a promise that never resolves)");
  }
  return new ScriptFailedError(owner.kind, `could not run: ${message}`);
}
