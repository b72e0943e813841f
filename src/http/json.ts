/** JSON rules shared by every feature that reads or merges client JSON. */

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * RFC 7396: objects merge member by member, null removes a member, anything else replaces. A Map
 * and Object.fromEntries keep a member named __proto__ as data, never as a prototype. Bodies are
 * at most MAX_JSON_DEPTH deep (src/http/body.ts), which bounds the recursion.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const merged = new Map(Object.entries(isPlainObject(target) ? target : {}));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key);
    else merged.set(key, applyMergePatch(merged.get(key), value));
  }
  return Object.fromEntries(merged);
}
