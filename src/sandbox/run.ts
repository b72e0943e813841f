import { exports } from "cloudflare:workers";
import type { ScriptOwner, ScriptRequest } from "../context";
import { utf8 } from "../crypto/encoding";
import { type SignedProps, signProps } from "../crypto/entrypoint-props";
import { Keyring } from "../crypto/keyring";
import { settleWithin } from "../deadline";
import type { Config } from "../env";
import { ConfigurationError, type RevealedValues } from "../errors";
import { SANDBOX } from "../limits";
import type { BridgeProps } from "./bridge-protocol";
import { ScriptFailedError, ScriptInputTooLargeError, ScriptTimeoutError } from "./errors";
import { type ReactorResult, resultOf, type TransformResult } from "./outcome";

/** Largest input (args and configuration, as JSON) a script may be given. */
const MAX_INPUT_BYTES = SANDBOX.inputMaxBytes;

/** The capability `bt` uses, for the application a script acts as. */
export interface BridgeCapability {
  applicationId: string;
  capability: Fetcher;
}

/**
 * What both hosts do around a run: bound the input, hand the script its `bt`, hold it to the wall
 * clock, and check what it reports against its kind's contract. `call` runs it on its host.
 */
export async function runScript(
  config: Config,
  revealed: RevealedValues,
  request: ScriptRequest,
  call: (inputJson: string, bridge: BridgeCapability | null) => Promise<unknown>,
): Promise<TransformResult | ReactorResult> {
  const { owner } = request;
  const inputJson = JSON.stringify(request.input);
  if (utf8BytesOver(inputJson, MAX_INPUT_BYTES)) throw new ScriptInputTooLargeError(owner.kind, MAX_INPUT_BYTES);
  const bridge = request.application ? await bridgeFor(config, request.application) : null;
  // Awaited rather than returned: workerd reports a rejection adopted one microtask late as unhandled.
  const report = await withinWallClock(owner, config.SANDBOX_WALL_TIME_MS, async () => await call(inputJson, bridge));
  // What tenant code read through `bt` joins the request's revealed values.
  return resultOf(owner.kind, report, revealed);
}

/** Whether `text` takes more than `limit` bytes as UTF-8: encoded only when its length leaves it in doubt. */
function utf8BytesOver(text: string, limit: number): boolean {
  // A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair takes 4 for 2 units).
  if (text.length * 3 <= limit) return false;
  return text.length > limit || utf8.encode(text).byteLength > limit;
}

interface BridgeEntrypoints {
  Bridge(options: { props: SignedProps<BridgeProps> }): Fetcher;
}

/** The capability `bt` uses: its props, set and signed here and never by tenant code, decide the principal. */
async function bridgeFor(config: Config, application: NonNullable<ScriptRequest["application"]>): Promise<BridgeCapability> {
  const props = await signProps<BridgeProps>(Keyring.of(config.keyring), "Bridge", {
    tenantId: application.tenantId,
    applicationId: application.applicationId,
  });
  return { applicationId: application.applicationId, capability: (exports as unknown as BridgeEntrypoints).Bridge({ props }) };
}

async function withinWallClock(owner: ScriptOwner, limitMs: number, run: () => Promise<unknown>): Promise<unknown> {
  const settled = (async () => {
    try {
      return await run();
    } catch (error) {
      throw runtimeFailure(owner, error);
    }
  })();
  return await settleWithin(settled, limitMs, () => new ScriptTimeoutError(owner.kind, limitMs));
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
