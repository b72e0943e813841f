import { env } from "cloudflare:test";
import type { Principal } from "../../src/auth/access";
import type { ScriptKind, ScriptOwner } from "../../src/context";
import type { Bindings } from "../../src/env";
import { sandboxContext } from "./context";

/** A fresh owner, so each test gets its own isolate. */
export function scriptOwner(kind: ScriptKind = "reactor", tenantId = "sandbox-tests"): ScriptOwner {
  return { tenantId, id: crypto.randomUUID(), kind };
}

export interface RunOptions {
  kind?: ScriptKind;
  owner?: ScriptOwner;
  args?: unknown;
  configuration?: Record<string, unknown>;
  application?: Principal | null;
  /** Another environment, e.g. with the development egress setting off. */
  env?: Bindings;
}

/** Runs `code` through the sandbox's public interface. */
export function run(code: string, options: RunOptions = {}) {
  const owner = options.owner ?? scriptOwner(options.kind);
  return sandboxContext(owner.tenantId ?? "official", options.env ?? env).sandbox.run({
    owner,
    code,
    input: { args: options.args ?? {}, configuration: options.configuration ?? {} },
    application: options.application ?? null,
  });
}

/** The test environment with the development egress setting off, as in production. */
export function productionEgressEnv(): Bindings {
  return { ...env, ALLOW_INSECURE_DESTINATIONS: "false" } as Bindings;
}

/** The original reactor errors page's table: each typed error of the formula SDK, its status and its detail. */
export const TYPED_ERRORS: [name: string, status: number, detail: string][] = [
  ["AuthenticationError", 401, "Authentication Failed"],
  ["AuthorizationError", 403, "Forbidden"],
  ["BadRequestError", 400, "Bad Request"],
  ["InvalidPaymentMethodError", 402, "Invalid Payment Method"],
  ["InvalidReactorConfigurationError", 400, "Invalid Reactor Configuration"],
  ["RateLimitError", 429, "Rate Limit Exceeded"],
  ["ReactorRuntimeError", 500, "Reactor Runtime Error"],
  ["ServiceUnavailableError", 503, "Service Unavailable Error"],
];
