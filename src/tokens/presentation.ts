import type { Transform } from "../auth/access";
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

/** The token as the caller may see it: data revealed, masked (absent without a mask) or redacted. */
export async function present(row: TokenRow, transform: Transform, data: () => unknown): Promise<TokenResponse> {
  const shown = await shownData(row, transform, data);
  return {
    id: row.id,
    type: row.type as TokenType,
    tenant_id: row.tenantId,
    ...shown,
    fingerprint: row.fingerprint,
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
 * made it, never its data or mask.
 */
export function tokenEventData(token: TokenResponse): Record<string, unknown> {
  return {
    token: {
      id: token.id,
      type: token.type,
      metadata: token.metadata,
      containers: token.containers,
      fingerprint: token.fingerprint,
      fingerprint_expression: token.fingerprint_expression,
      search_indexes: token.search_indexes,
      created_by: token.created_by,
      created_at: token.created_at,
      modified_by: token.modified_by,
      modified_at: token.modified_at,
      expires_at: token.expires_at,
    },
  };
}
