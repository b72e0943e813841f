import { toHex, utf8 } from "../crypto/encoding";
import type { Bindings, Config } from "../env";
import { ConfigurationError, ProblemError } from "../http/problem";
import { type SandboxEntrypoint, SUBREQUEST_LIMIT } from "./loader-host";
import type { ScriptOwner } from "./types";
import {
  buildScriptModules,
  MAIN_MODULE,
  SANDBOX_COMPATIBILITY_DATE,
  SANDBOX_COMPATIBILITY_FLAGS,
  type ScriptModule,
} from "./worker-script";

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
 * The script's name in the namespace: stable for the owner (so an update replaces it) and free of
 * tenant-chosen text.
 */
export async function dispatchScriptName(owner: ScriptOwner): Promise<string> {
  const digest = toHex(await crypto.subtle.digest("SHA-256", utf8.encode(`${owner.tenantId}/${owner.kind}/${owner.id}`)));
  return `${owner.kind}-${digest.slice(0, 40)}`;
}

/** Uploads the script with its metadata as one multipart form, as the Workers API expects. */
export async function uploadScript(config: Config, owner: ScriptOwner, code: string): Promise<void> {
  const modules = buildScriptModules(code, { cpuMs: config.SANDBOX_CPU_MS });
  const form = new FormData();
  form.set(
    "metadata",
    JSON.stringify({
      main_module: MAIN_MODULE,
      compatibility_date: SANDBOX_COMPATIBILITY_DATE,
      compatibility_flags: SANDBOX_COMPATIBILITY_FLAGS,
      bindings: [],
      tags: [`tenant-${owner.tenantId}`, owner.kind],
    }),
  );
  for (const module of modules) {
    form.set(module.name, new File([module.source], module.name, { type: MIME_TYPES[module.format] }));
  }
  const response = await fetch(await scriptUrl(config, owner), { method: "PUT", headers: authorization(config), body: form });
  if (!response.ok) throw new ScriptPublishError("upload", response.status, await reasonOf(response));
}

/** Removes the owner's script; one that is already gone counts as removed. */
export async function deleteScript(config: Config, owner: ScriptOwner): Promise<void> {
  const response = await fetch(await scriptUrl(config, owner), { method: "DELETE", headers: authorization(config) });
  if (!response.ok && response.status !== 404) throw new ScriptPublishError("remove", response.status, await reasonOf(response));
}

export async function dispatchEntrypoint(env: Bindings, config: Config, owner: ScriptOwner): Promise<SandboxEntrypoint> {
  if (!env.DISPATCHER) throw new ConfigurationError("SANDBOX_HOST=dispatch needs the DISPATCHER dispatch namespace binding");
  const worker = env.DISPATCHER.get(
    await dispatchScriptName(owner),
    {},
    {
      limits: { cpuMs: config.SANDBOX_CPU_MS, subRequests: SUBREQUEST_LIMIT },
    },
  );
  return worker as unknown as SandboxEntrypoint;
}

async function scriptUrl(config: Config, owner: ScriptOwner): Promise<string> {
  const { CLOUDFLARE_API_BASE: base, CLOUDFLARE_ACCOUNT_ID: account, DISPATCH_NAMESPACE: namespace } = config;
  if (!account || !namespace || !config.CLOUDFLARE_API_TOKEN) {
    throw new ConfigurationError("SANDBOX_HOST=dispatch needs CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN and DISPATCH_NAMESPACE");
  }
  const name = await dispatchScriptName(owner);
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
