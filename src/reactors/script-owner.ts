import type { ScriptOwner } from "../context";

/** Official formulas belong to no tenant: their scripts are published under this owner. */
export const OFFICIAL_SCRIPT_OWNER = "official";

/** How the sandbox names a formula's script. */
export function scriptOwnerOf(formula: { id: string; tenantId: string | null }): ScriptOwner {
  return { tenantId: formula.tenantId ?? OFFICIAL_SCRIPT_OWNER, id: formula.id, kind: "reactor" };
}
