/**
 * Updating a token (PATCH /tokens/{id}, `bt.tokens.update`): a merge patch of its data and
 * settings, re-evaluated and re-sealed, and written only over the row it was computed from (a
 * concurrent change is a 409).
 */
import { accessTo, isBrowserKey, type Principal, requireOnEveryContainer, requireOnTokenContainers } from "../auth/access";
import type { TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { ConflictError, type FieldErrors, ForbiddenError, NotFoundError, ValidationError } from "../errors";
import { applyMergePatch } from "../http/json";
import { isoTime } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { browserRefusedExpressions, EXPRESSION_REFUSAL } from "./creation";
import { cvcDeadlineOf } from "./cvc";
import { deduplicationRefusal, duplicateOfUpdate } from "./deduplication";
import { definitionOf, evaluate, fieldErrorCollector, type TokenDefinition } from "./definition";
import { WorkBudget } from "./expressions";
import { canonicalJson } from "./filter-registry";
import { maskOf } from "./mask-templates";
import { containersOf, metadataOf, present, searchIndexesOf, tokenEventData } from "./presentation";
import { CreateTokenBody, type TokenResponse, type UpdatedTokenResponse, type UpdateToken } from "./schema";
import { decryptData, keepPreviousFingerprint, sealToken } from "./sealing";
import { findLiveToken } from "./service";
import type { TokenRow } from "./storage";
import { replaceToken } from "./storage-writes";

/**
 * Applies a JSON merge patch: `data` and `metadata` merge, the other members replace, null resets a
 * member to the type's default. The result is validated as a new token would be, and indexes and
 * fingerprint are recomputed. Moving between containers needs token:update on both sides.
 */
export async function updateToken(
  context: TenantContext,
  principal: Principal,
  id: string,
  patch: UpdateToken,
): Promise<UpdatedTokenResponse> {
  context.requireWritable();
  const refusal = patch.deduplicate_token ? deduplicationRefusal(principal) : null;
  if (refusal) throw ValidationError.field("deduplicate_token", refusal);
  const expressions = isBrowserKey(principal) ? browserRefusedExpressions(patch) : [];
  if (expressions.length > 0) {
    throw ValidationError.summarised(
      "The token was not updated",
      Object.fromEntries(expressions.map((member) => [member, [EXPRESSION_REFUSAL]])),
    );
  }
  let row = await tokenToUpdate(context, principal, id);
  const keys = await context.keys();
  for (let attempt = 1; ; attempt++) {
    const now = Date.now();
    requireOnTokenContainers(principal, "token:update", containersOf(row), row.id);
    const stored = await decryptData(keys, row);
    const definition = patchedDefinition(row, stored, patch);
    requireOnEveryContainer(principal, "token:update", definition.containers, "", row.id);
    const added = definition.containers.filter((container) => !containersOf(row).includes(container));
    requireOnEveryContainer(principal, "token:create", added, "", row.id);
    requireSightOfData(principal, row, stored, definition, patch);
    const errors: FieldErrors = {};
    const evaluated = evaluate(definition, fieldErrorCollector(errors), WorkBudget.of(definition.data));
    if (Object.keys(errors).length > 0) throw ValidationError.summarised("The token was not updated", errors);
    const sealed = keepPreviousFingerprint(
      await sealToken(keys, definition, evaluated, {
        id: row.id,
        tenantId: row.tenantId,
        createdBy: row.createdBy,
        createdAt: row.createdAt,
        modifiedBy: principal.applicationId,
        modifiedAt: now,
        // The cvc's window starts when the data is written, not when other members change.
        cvcExpiresAt: patch.data === undefined ? row.cvcExpiresAt : cvcDeadlineOf(definition, now, context.config),
      }),
      row,
    );
    if (patch.deduplicate_token) {
      const duplicate = await duplicateOfUpdate(context.db, principal, sealed, now);
      if (duplicate) return presentDuplicate(keys, principal, duplicate);
    }
    if (await replaceToken(context.db.$client, context.writeFence(now), sealed, row.ciphertext)) {
      const transform = accessTo(principal, "token:update", definition.containers, row.id) ?? "redact";
      const updated = await present(principal, sealed.row, transform, () => definition.data);
      context.audit.describe({ event: { type: "token.updated", data: tokenEventData(sealed.row) } });
      return principal.applicationType === "public" ? publicUpdateAnswer(updated) : { ...updated, _extras: { deduplicated: false } };
    }
    const current = await findLiveToken(context, id, Date.now());
    // Re-sealed by a data-key rotation, or its cvc dropped by the cron: neither is a change of the
    // token's (modified_at stays), so the patch applies to what is stored now.
    if (current.modifiedAt !== row.modifiedAt || attempt === 3) {
      throw new ConflictError(`Token ${id} was changed by another request meanwhile; read it and retry`);
    }
    row = current;
  }
}

/**
 * The token the patch applies to. A public key, which anyone can read from the page, may update only
 * tokens its own application created; any other id, known or not, is the same 403, so that it learns
 * nothing of other tokens (docs/decisions.md: a departure from the original interface).
 */
async function tokenToUpdate(context: TenantContext, principal: Principal, id: string): Promise<TokenRow> {
  if (principal.applicationType !== "public") return findLiveToken(context, id, Date.now());
  const row = await findLiveToken(context, id, Date.now()).catch((error: unknown) => {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  });
  if (row?.createdBy !== principal.applicationId)
    throw new ForbiddenError("A public key may update only tokens its own application created");
  return row;
}

/** A public key's update answers under redact, whatever its rule: the token's identity, metadata and times. */
function publicUpdateAnswer(token: TokenResponse): UpdatedTokenResponse {
  const { id, type, tenant_id, metadata, expires_at, created_by, created_at, modified_by, modified_at } = token;
  return { id, type, tenant_id, metadata, expires_at, created_by, created_at, modified_by, modified_at, _extras: { deduplicated: false } };
}

/**
 * Members that are functions of the data (a mask shows it, a fingerprint or a search index is an
 * oracle of it), and the containers that decide who reads it under which rule, may change only in
 * the request that replaces the whole data (the caller supplied it), or by a caller whose
 * token:update rule reveals the data in every container of the token, before and after. Adding a
 * container is not such a change: reads take the strictest rule of all the token's containers.
 */
function requireSightOfData(principal: Principal, row: TokenRow, stored: unknown, definition: TokenDefinition, patch: UpdateToken): void {
  if (patch.data !== undefined && sameJson(applyMergePatch(null, patch.data), applyMergePatch(stored, patch.data))) return;
  const before = containersOf(row);
  const changed = [
    ["mask", !sameJson(maskOf(row.mask), definition.mask)],
    ["fingerprint_expression", row.fingerprintExpression !== definition.fingerprintExpression],
    ["search_indexes", !sameJson(searchIndexesOf(row), definition.searchIndexes)],
    ["containers", before.some((container) => !definition.containers.includes(container))],
  ].flatMap(([member, differs]) => (differs ? [member] : []));
  if (changed.length === 0) return;
  if (accessTo(principal, "token:update", [...before, ...definition.containers], row.id) === "reveal") return;
  throw new ForbiddenError(
    `${changed.join(", ")} may change only in the request that replaces the whole data, or by a caller whose token:update ` +
      "rule reveals the data in every container of the token, before and after the update; this caller's rules do not",
  );
}

function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/**
 * The stored token with the patch applied, validated as a create request: `data` and `metadata`
 * merge (RFC 7396), a member the patch leaves out keeps its stored value, and null resets a member
 * to the type's default (metadata to none).
 */
function patchedDefinition(row: TokenRow, data: unknown, patch: UpdateToken): TokenDefinition {
  const stored = {
    data,
    metadata: metadataOf(row),
    containers: containersOf(row),
    search_indexes: searchIndexesOf(row),
    fingerprint_expression: row.fingerprintExpression,
    mask: maskOf(row.mask),
    expires_at: isoTime(row.expiresAt),
  };
  const merged = CreateTokenBody.safeParse({
    ...stored,
    ...definedMembers(patch),
    type: row.type,
    data: patch.data === undefined ? stored.data : applyMergePatch(stored.data, patch.data),
    metadata: patch.metadata === undefined ? stored.metadata : patch.metadata && applyMergePatch(stored.metadata, patch.metadata),
  });
  if (!merged.success) throw validationErrorOf(merged.error);
  return definitionOf(merged.data);
}

/** The members the patch sets (null included), without `deduplicate_token`, which is no member of a token. */
function definedMembers(patch: UpdateToken): Partial<UpdateToken> {
  const { deduplicate_token: _deduplicate, ...members } = patch;
  return Object.fromEntries(Object.entries(members).filter(([, value]) => value !== undefined));
}

/**
 * The existing token an update duplicates, per the principal's token:read transform; without
 * token:read on it, its definition is left out along with its data.
 */
async function presentDuplicate(keys: TenantKeys, principal: Principal, row: TokenRow): Promise<UpdatedTokenResponse> {
  const transform = accessTo(principal, "token:read", containersOf(row), row.id);
  const token = await present(principal, row, transform ?? "redact", () => decryptData(keys, row));
  if (transform !== null) return { ...token, _extras: { deduplicated: true } };
  const { metadata: _metadata, search_indexes: _indexes, fingerprint_expression: _expression, mask: _mask, ...redacted } = token;
  return { ...redacted, _extras: { deduplicated: true } };
}
