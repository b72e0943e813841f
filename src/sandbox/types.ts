import type { Principal } from "../auth/access";

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
