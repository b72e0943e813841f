import type { ScriptOwner } from "../context";

/** Official formulas belong to no tenant: their scripts are published under this owner. */
export const OFFICIAL_SCRIPT_OWNER = "official";

/**
 * How the sandbox names the script of a formula, or of a reactor with its own code (its owner is the
 * reactor): ids are UUIDs, so the two never share a name.
 */
export function scriptOwnerOf(owner: { id: string; tenantId: string | null }): ScriptOwner {
  return { tenantId: owner.tenantId ?? OFFICIAL_SCRIPT_OWNER, id: owner.id, kind: "reactor" };
}
