import { exports } from "cloudflare:workers";
import type { ScriptHost, ScriptOwner, ScriptRequest } from "../context";
import { toHex, utf8 } from "../crypto/encoding";
import { type SignedProps, signProps } from "../crypto/entrypoint-props";
import { Keyring } from "../crypto/keyring";
import type { EgressFetchOptions } from "../egress/policy";
import type { Bindings, Config } from "../env";
import { ConfigurationError, type RevealedValues } from "../errors";
import { SANDBOX } from "../limits";
import { type BridgeCapability, runScript } from "./run";
import {
  loaderScriptModules,
  MAIN_MODULE,
  SANDBOX_COMPATIBILITY_DATE,
  SANDBOX_COMPATIBILITY_FLAGS,
  type ScriptModule,
  WRAPPER_VERSION,
} from "./worker-script";

/**
 * The Worker Loader host: each run builds (or reuses) an isolate from the code it is given, so
 * nothing is published ahead of time.
 */
export class LoaderHost implements ScriptHost {
  constructor(
    private readonly env: Bindings,
    private readonly config: Config,
    /** The request's revealed values: what tenant code read through `bt` joins them. */
    private readonly revealed: RevealedValues,
  ) {}

  async publish(): Promise<void> {}

  run(request: ScriptRequest) {
    return runScript(this.config, this.revealed, request, async (inputJson, bridge) => {
      const loaded = await loaderEntrypoint(this.env, this.config, request.owner, request.code, bridge);
      return await loaded.run(inputJson, null);
    });
  }
}

/**
 * Calls into a sandboxed script with the input as JSON. The bridge capability `bt` is built from
 * either travels with the call (dispatch host) or sits in the isolate's env (loader host).
 */
export interface SandboxEntrypoint {
  run(inputJson: string, bridge: Fetcher | null): Promise<unknown>;
  /** What `url` answers (null on failure), without running tenant code: the dispatch host's check of its outbound worker. */
  checkEgress(url: string): Promise<string | null>;
}

/** Fetches and RPC calls a script may make per run (bridge calls included). */
export const SUBREQUEST_LIMIT = SANDBOX.subrequests;

/** The egress policy tenant code's fetches pass, on either host. */
export function sandboxEgress(config: Config): EgressFetchOptions {
  return { allowInsecure: config.ALLOW_INSECURE_DESTINATIONS, timeoutMs: config.SANDBOX_WALL_TIME_MS };
}

interface VaultEntrypoints {
  Egress(options: { props: SignedProps<EgressFetchOptions> }): Fetcher;
}

/**
 * Runs the script in an isolate of the Worker Loader. The isolate is reused while everything it
 * was built from is unchanged; its id includes the owner, so two owners never share module state,
 * and the application, since the bridge to act as it is part of the isolate's env.
 */
async function loaderEntrypoint(
  env: Bindings,
  config: Config,
  owner: ScriptOwner,
  code: string,
  bridge: BridgeCapability | null,
): Promise<SandboxEntrypoint> {
  if (!env.LOADER) throw new ConfigurationError("SANDBOX_HOST=loader needs the LOADER worker loader binding");
  const egress = sandboxEgress(config);
  const id = await isolateId([
    WRAPPER_VERSION,
    owner.tenantId,
    owner.kind,
    owner.id,
    bridge?.applicationId ?? null,
    config.SANDBOX_CPU_MS,
    egress,
    code,
  ]);
  const worker = env.LOADER.get(id, async () => ({
    compatibilityDate: SANDBOX_COMPATIBILITY_DATE,
    compatibilityFlags: SANDBOX_COMPATIBILITY_FLAGS,
    mainModule: MAIN_MODULE,
    modules: loaderModules(loaderScriptModules(code, { cpuMs: config.SANDBOX_CPU_MS })),
    // Nothing ambient: only the bridge, scoped to the application, and the network only via egress.
    // (The runtime of wrangler 4.86 cannot pass a service stub as a call argument, but can in env.)
    env: bridge ? { BRIDGE: bridge.capability } : {},
    globalOutbound: (exports as unknown as VaultEntrypoints).Egress({
      props: await signProps(Keyring.of(config.keyring), "Egress", egress),
    }),
    limits: { cpuMs: config.SANDBOX_CPU_MS, subRequests: SUBREQUEST_LIMIT },
  }));
  return worker.getEntrypoint() as unknown as SandboxEntrypoint;
}

function loaderModules(modules: ScriptModule[]): Record<string, WorkerLoaderModule> {
  return Object.fromEntries(
    modules.map((module) => [module.name, module.format === "esm" ? { js: module.source } : { cjs: module.source }]),
  );
}

/** Ids already digested, by what they were digested from: a transform runs on every proxied call. */
const isolateIds = new Map<string, string>();
/**
 * Characters of those keys (the code, mostly) held at most, about 2 MB: the map starts afresh when
 * a key would pass it. An isolate serves a few scripts; one of the longest code is 50,000 characters.
 */
const ISOLATE_IDS_HELD_CHARACTERS = 1_000_000;
let heldCharacters = 0;

async function isolateId(parts: unknown[]): Promise<string> {
  const key = JSON.stringify(parts);
  const known = isolateIds.get(key);
  if (known !== undefined) return known;
  const id = `sandbox-${toHex(await crypto.subtle.digest("SHA-256", utf8.encode(key)))}`;
  if (heldCharacters + key.length > ISOLATE_IDS_HELD_CHARACTERS) {
    isolateIds.clear();
    heldCharacters = 0;
  }
  heldCharacters += key.length;
  isolateIds.set(key, id);
  return id;
}
