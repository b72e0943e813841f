import type { ScriptOwner } from "../context";

/**
 * How the sandbox names the script of a formula, or of a reactor with its own code (its owner is the
 * reactor): ids are UUIDs, so the two never share a name.
 */
export function scriptOwnerOf(owner: { id: string; tenantId: string | null }): ScriptOwner {
  return { tenantId: owner.tenantId, id: owner.id, kind: "reactor" };
}
