import type { ScriptHost, ScriptOwner, ScriptRequest } from "../context";
import { toHex, utf8 } from "../crypto/encoding";
import type { Database } from "../db/client";
import { EGRESS_CHECK_URL, OUTBOUND_PARAMETER, OUTBOUND_SERVICE, type OutboundParameters } from "../egress/outbound";
import type { Bindings, Config } from "../env";
import { ConfigurationError, ProblemError, type RevealedValues, TooManyRequestsError } from "../errors";
import { forgetScript, markScriptChecked, otherVersionsOf, recordScript, scriptsUncheckedSince } from "./dispatch-storage";
import { type SandboxEntrypoint, SUBREQUEST_LIMIT, sandboxEgress } from "./loader-host";
import { runScript } from "./run";
import {
  buildScriptModules,
  MAIN_MODULE,
  SANDBOX_COMPATIBILITY_DATE,
  SANDBOX_COMPATIBILITY_FLAGS,
  type ScriptModule,
} from "./worker-script";

/**
 * The Workers for Platforms host: a script is uploaded to the dispatch namespace when its proxy,
 * reactor or formula is saved, and runs there; `bt` travels with each call. A script is named by its
 * owner and its code, and a run dispatches by the code it is given (the code on record), so no
 * update, concurrent or cut short, can leave other code running than the row names. Old versions
 * stay until the cron retires them (retireUnusedScripts).
 */
export class DispatchHost implements ScriptHost {
  constructor(
    private readonly env: Bindings,
    private readonly config: Config,
    /** The request's revealed values: what tenant code read through `bt` joins them. */
    private readonly revealed: RevealedValues,
    /** The control database, which records every upload before it is made. */
    private readonly control: Database,
  ) {}

  /**
   * A tenant's owner may have at most SCRIPT_VERSIONS_MAX versions recorded (its current one and
   * those awaiting the cron): each save of new code is a new script, and without a bound a tenant
   * saving in a loop would fill the namespace faster than the cron retires it. Saving the same code
   * again is no new version.
   */
  async publish(owner: ScriptOwner, code: string): Promise<void> {
    const name = await dispatchScriptName(owner, code);
    if (owner.tenantId !== null && (await otherVersionsOf(this.control, owner, name, SCRIPT_VERSIONS_MAX)) >= SCRIPT_VERSIONS_MAX) {
      throw new TooManyRequestsError(
        `This ${owner.kind} has ${SCRIPT_VERSIONS_MAX} earlier versions that wait to leave the dispatch namespace`,
        (2 * SCRIPT_RETIREMENT_GRACE_MS) / 1000,
      );
    }
    await this.upload(owner, code, name);
  }

  /** Records the script, then uploads it. */
  private async upload(owner: ScriptOwner, code: string, name: string): Promise<void> {
    const url = scriptUrl(this.config, name);
    await recordScript(this.control, name, owner, Date.now());
    await uploadScript(this.config, url, owner, code);
  }

  /**
   * Runs the script of the code it is given. One the namespace does not hold (a sweep deleted it
   * while a save of that very code was naming it again, or it was uploaded under another name by an
   * earlier release) is uploaded, recorded first, and run: the code on record always runs. Only a
   * miss the wrapper confirms without tenant code (checkEgress) uploads and runs again, so a script
   * cannot have itself run twice by failing with the same message.
   */
  run(request: ScriptRequest) {
    return runScript(this.config, this.revealed, request, async (inputJson, bridge) => {
      const name = await dispatchScriptName(request.owner, request.code);
      const capability = bridge?.capability ?? null;
      try {
        return await (await dispatchEntrypoint(this.env, this.config, name)).run(inputJson, capability);
      } catch (error) {
        if (!isMissingWorker(error) || !(await this.confirmMissing(name))) throw error;
      }
      // The code on record must run: no bound on versions here.
      await this.upload(request.owner, request.code, name);
      return await (await dispatchEntrypoint(this.env, this.config, name)).run(inputJson, capability);
    });
  }

  /** Whether the namespace lacks the script, asked of the wrapper alone (no tenant handler runs). */
  private async confirmMissing(name: string): Promise<boolean> {
    try {
      await (await dispatchEntrypoint(this.env, this.config, name)).checkEgress(EGRESS_CHECK_URL);
      return false;
    } catch (error) {
      return isMissingWorker(error);
    }
  }
}

/** The namespace's answer for a script it does not hold ("Worker not found."). */
function isMissingWorker(error: unknown): boolean {
  return error instanceof Error && /^Worker not found\b/.test(error.message);
}

/**
 * How long a script is kept after it was uploaded or last found in use before the cron may delete
 * it: longer than an isolate may hold an owner's old row (CREDENTIAL_CACHE_TTL_MS, at most a minute)
 * and than any request that read it runs (SANDBOX_WALL_TIME_MS and a proxy's destination, well
 * under a minute), and than a save takes between its upload and its row write.
 */
export const SCRIPT_RETIREMENT_GRACE_MS = 10 * 60_000;

/**
 * How much later than the grace period the cron looks again at a script its owner runs: a save of
 * the owner brings its other versions' next look forward (recordScript), so this bounds only how
 * long a deleted owner's scripts stay, while live scripts, however many, take no batch room each
 * grace period from those to retire.
 */
export const SCRIPT_LIVE_RECHECK_MS = 24 * 60 * 60_000;

/** Versions of one tenant owner's script recorded at once, at most: see DispatchHost.publish. */
export const SCRIPT_VERSIONS_MAX = 20;

/** Recorded scripts one cron run looks at, at most: each costs a lookup, and a deletion one API call. */
const SCRIPT_RETIREMENT_BATCH = 50;

/** The code an owner runs now; null when it is gone or runs none. */
export type CurrentCode = (owner: ScriptOwner) => Promise<string | null>;

/**
 * The cron's deletion of scripts no owner runs: superseded versions, uploads whose row write never
 * happened, and scripts of deleted owners (a shredded tenant's included). Looks at the scripts
 * unchecked for the grace period, longest first. One its owner runs waits a day more (or until its
 * owner records another version). One
 * no owner runs is deleted only when it was found so a grace period before too: when it was last
 * found in use says nothing of when it stopped being, and an isolate may hold the row that named it
 * for a while after. A deletion the API refuses keeps the record, for the next run, behind the
 * scripts due now.
 */
export async function retireUnusedScripts(control: Database, config: Config, now: number, currentCode: CurrentCode): Promise<void> {
  const due = await scriptsUncheckedSince(control, now - SCRIPT_RETIREMENT_GRACE_MS, SCRIPT_RETIREMENT_BATCH);
  for (const script of due) {
    const code = await currentCode(script.owner);
    if (code !== null && (await dispatchScriptName(script.owner, code)) === script.name) {
      // Its next look is a day on, unless a save of its owner records another version first.
      await markScriptChecked(control, script.name, now + SCRIPT_LIVE_RECHECK_MS, null);
      continue;
    }
    if (script.unusedSince === null) {
      await markScriptChecked(control, script.name, now, now);
      continue;
    }
    try {
      await deleteScript(config, script.name);
    } catch (error) {
      console.warn(`sandbox: script ${script.name} waits for the next run to be deleted: ${(error as Error).message}`);
      // Still due at the next run, but behind every script due now: deletions the API refuses every
      // time must not take every run's whole batch.
      await markScriptChecked(control, script.name, now - SCRIPT_RETIREMENT_GRACE_MS, script.unusedSince);
      continue;
    }
    await forgetScript(control, script.name);
  }
}

/** The Cloudflare API refused or failed an upload or removal. */
export class ScriptPublishError extends ProblemError {
  constructor(action: string, status: number, reason: string) {
    super(502, "Script Publish Failed", `Could not ${action} the script in the dispatch namespace (${status}): ${reason}`);
  }
}

const MIME_TYPES: Record<ScriptModule["format"], string> = {
  esm: "application/javascript+module",
  commonjs: "application/javascript",
};

/**
 * The script's name in the namespace: a digest of its owner and its code, free of tenant-chosen
 * text. Another version of the code is another script; the same code is the same script, so
 * uploading it again is harmless.
 */
export async function dispatchScriptName(owner: ScriptOwner, code: string): Promise<string> {
  const key = JSON.stringify([owner.tenantId, owner.kind, owner.id, code]);
  const digest = toHex(await crypto.subtle.digest("SHA-256", utf8.encode(key)));
  return `${owner.kind}-${digest.slice(0, 40)}`;
}

/** Uploads the script with its metadata as one multipart form, as the Workers API expects. */
async function uploadScript(config: Config, url: string, owner: ScriptOwner, code: string): Promise<void> {
  const modules = buildScriptModules(code, { cpuMs: config.SANDBOX_CPU_MS });
  const form = new FormData();
  form.set(
    "metadata",
    JSON.stringify({
      main_module: MAIN_MODULE,
      compatibility_date: SANDBOX_COMPATIBILITY_DATE,
      compatibility_flags: SANDBOX_COMPATIBILITY_FLAGS,
      bindings: [],
      tags: [owner.tenantId === null ? "official" : `tenant-${owner.tenantId}`, owner.kind],
    }),
  );
  for (const module of modules) {
    form.set(module.name, new File([module.source], module.name, { type: MIME_TYPES[module.format] }));
  }
  const response = await fetch(url, { method: "PUT", headers: authorization(config), body: form });
  if (!response.ok) throw new ScriptPublishError("upload", response.status, await reasonOf(response));
}

/** Removes the script; one that is already gone counts as removed. */
async function deleteScript(config: Config, name: string): Promise<void> {
  const response = await fetch(scriptUrl(config, name), { method: "DELETE", headers: authorization(config) });
  if (!response.ok && response.status !== 404) throw new ScriptPublishError("remove", response.status, await reasonOf(response));
}

/** The namespace does not route tenant code's fetches through the outbound worker that applies the egress policy. */
export class OutboundMissingError extends ConfigurationError {
  constructor() {
    super(
      `SANDBOX_HOST=dispatch needs the DISPATCHER binding's outbound worker, so that tenant code's fetches pass the egress policy: ` +
        `deploy wrangler.egress.toml and set outbound = { service = "${OUTBOUND_SERVICE}", parameters = ["${OUTBOUND_PARAMETER}"] } ` +
        "in the binding's [[dispatch_namespaces]]. Tenant code does not run until then",
    );
  }
}

/**
 * Namespace bindings whose outbound worker answered the check in this isolate. A binding's
 * outbound worker is part of the vault's deployment, so one check per isolate holds for its life.
 */
const checkedNamespaces = new WeakSet<DispatchNamespace>();

/** Calls into the script in the namespace; every fetch it makes goes through the outbound worker with the egress policy. */
async function dispatchEntrypoint(env: Bindings, config: Config, name: string): Promise<SandboxEntrypoint> {
  const namespace = env.DISPATCHER;
  if (!namespace) throw new ConfigurationError("SANDBOX_HOST=dispatch needs the DISPATCHER dispatch namespace binding");
  const limits = { cpuMs: config.SANDBOX_CPU_MS, subRequests: SUBREQUEST_LIMIT };
  const egress: OutboundParameters = sandboxEgress(config);
  if (!checkedNamespaces.has(namespace)) {
    await checkOutbound(namespace, name, { limits, egress });
    checkedNamespaces.add(namespace);
  }
  const worker = namespace.get(name, {}, { limits, outbound: { [OUTBOUND_PARAMETER]: egress } });
  return worker as unknown as SandboxEntrypoint;
}

/**
 * Proves, before tenant code gets any input, that the script's fetches reach the outbound worker
 * with the parameters passed here: only the outbound worker answers EGRESS_CHECK_URL, and only it
 * knows the random value it echoes. Tenant code cannot forge it, whatever it does in its isolate.
 */
async function checkOutbound(
  namespace: DispatchNamespace,
  name: string,
  options: { limits: DynamicDispatchLimits; egress: OutboundParameters },
): Promise<void> {
  const check = crypto.randomUUID();
  const worker = namespace.get(name, {}, { limits: options.limits, outbound: { [OUTBOUND_PARAMETER]: { ...options.egress, check } } });
  const answer = await (worker as unknown as SandboxEntrypoint).checkEgress(EGRESS_CHECK_URL);
  if (answer !== check) throw new OutboundMissingError();
}

function scriptUrl(config: Config, name: string): string {
  const { CLOUDFLARE_API_BASE: base, CLOUDFLARE_ACCOUNT_ID: account, DISPATCH_NAMESPACE: namespace } = config;
  if (!account || !namespace || !config.CLOUDFLARE_API_TOKEN) {
    throw new ConfigurationError("SANDBOX_HOST=dispatch needs CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN and DISPATCH_NAMESPACE");
  }
  return `${base}/accounts/${encodeURIComponent(account)}/workers/dispatch/namespaces/${encodeURIComponent(namespace)}/scripts/${name}`;
}

function authorization(config: Config): Record<string, string> {
  return { authorization: `Bearer ${config.CLOUDFLARE_API_TOKEN}` };
}

/** The API's own error messages: `{errors: [{code, message}]}`. */
async function reasonOf(response: Response): Promise<string> {
  const body = await response.json<{ errors?: { message?: string }[] }>().catch(() => null);
  const messages = body?.errors?.map((error) => error.message).filter(Boolean) ?? [];
  return messages.length > 0 ? messages.join("; ") : response.statusText || "no reason given";
}
