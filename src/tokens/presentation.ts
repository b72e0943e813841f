import { isBrowserKey, type Principal, type Transform } from "../auth/access";
import { auditFieldsOf, isoTime } from "../http/schemas";
import { ExpressionError } from "./errors";
import { applyMask, maskOf } from "./mask-templates";
import type { TokenResponse } from "./schema";
import type { TokenRow } from "./storage";
import type { TokenType } from "./types";

/**
 * The data a transform shows: all of it, its mask (when the token has one), or none at all. A
 * stored mask that no longer evaluates within its budget (one saved before the budget existed)
 * shows nothing, as a redacting rule would.
 */
export async function shownData(row: Pick<TokenRow, "mask">, transform: Transform, data: () => unknown): Promise<{ data?: unknown }> {
  if (transform === "reveal") return { data: await data() };
  if (transform !== "mask" || row.mask === null) return {};
  try {
    return { data: applyMask(maskOf(row.mask)!, await data()) };
  } catch (error) {
    if (error instanceof ExpressionError) return {};
    throw error;
  }
}

/**
 * Whether the caller is shown the token's fingerprint. A fingerprint is an oracle of the data: whoever
 * can tokenize guesses and compare fingerprints learns the value. A private key whose rule masks or
 * reveals may compare them (deduplication is built on it, bounded by the key's rate limit); a key that
 * lives in a browser (public, or a session's expiring one) never sees one, and a redacting rule shows
 * no more of a token than its existence.
 */
export function showsFingerprint(principal: Pick<Principal, "applicationType">, transform: Transform): boolean {
  return transform !== "redact" && !isBrowserKey(principal);
}

/** The token as the caller may see it: data revealed, masked (absent without a mask) or redacted; the fingerprint as showsFingerprint says. */
export async function present(
  principal: Pick<Principal, "applicationType">,
  row: TokenRow,
  transform: Transform,
  data: () => unknown,
): Promise<TokenResponse> {
  const shown = await shownData(row, transform, data);
  return {
    id: row.id,
    type: row.type as TokenType,
    tenant_id: row.tenantId,
    ...shown,
    ...(showsFingerprint(principal, transform) ? { fingerprint: row.fingerprint } : {}),
    containers: containersOf(row),
    metadata: metadataOf(row),
    search_indexes: searchIndexesOf(row),
    fingerprint_expression: row.fingerprintExpression,
    mask: maskOf(row.mask) as TokenResponse["mask"],
    expires_at: isoTime(row.expiresAt),
    ...auditFieldsOf(row),
  };
}

export function containersOf(row: Pick<TokenRow, "containers">): string[] {
  return JSON.parse(row.containers) as string[];
}

export function metadataOf(row: Pick<TokenRow, "metadata">): Record<string, string> {
  return JSON.parse(row.metadata) as Record<string, string>;
}

export function searchIndexesOf(row: Pick<TokenRow, "searchIndexes">): string[] {
  return JSON.parse(row.searchIndexes) as string[];
}

/**
 * A token as webhook events describe it (token.created, token.updated): its definition and who
 * made it, never its data or mask. Events go to the tenant's own endpoints, so they carry the
 * fingerprint whichever key caused them.
 */
export function tokenEventData(row: TokenRow): Record<string, unknown> {
  return {
    token: {
      id: row.id,
      type: row.type,
      metadata: metadataOf(row),
      containers: containersOf(row),
      fingerprint: row.fingerprint,
      fingerprint_expression: row.fingerprintExpression,
      search_indexes: searchIndexesOf(row),
      ...auditFieldsOf(row),
      expires_at: isoTime(row.expiresAt),
    },
  };
}
