import type { Principal } from "../auth/access";
import type { ModuleFormat } from "./tenant-code";

export type ScriptKind = "request-transform" | "response-transform" | "reactor";

/** Whose script it is: `id` is the proxy's or the reactor formula's id. */
export interface ScriptOwner {
  tenantId: string;
  id: string;
  kind: ScriptKind;
}

export interface ScriptRequest {
  owner: ScriptOwner;
  code: string;
  input: { args: unknown; configuration: Record<string, unknown> };
  /** The application `bt` acts as; without one, tenant code gets no `bt`. */
  application: Principal | null;
}

/** One module of the worker script that hosts tenant code. */
export interface ScriptModule {
  name: string;
  format: ModuleFormat;
  source: string;
}

/** Limits baked into the script when it is built: the wrapper's prelude holds them. */
export interface ScriptLimits {
  /** Longest the isolate may stay busy without yielding before tenant code is stopped. */
  cpuMs: number;
}
