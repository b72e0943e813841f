/**
 * The token operations that read and remove tokens: get, list, delete, the cron's purge, and the
 * presentation of rows for search. Creation (creation.ts), updates (update.ts) and reads for
 * detokenization (use.ts) have files of their own.
 */
import { accessTo, grantedContainers, isBrowserKey, type Principal, requireOnTokenContainers } from "../auth/access";
import type { TokenPermission } from "../auth/permissions";
import type { RequestContext, TenantContext } from "../context";
import { ForbiddenError, NotFoundError } from "../errors";
import { type Page, pageOf } from "../http/schemas";
import { normalTokenId } from "./id-format";
import { containersOf, present } from "./presentation";
import { type ListTokens, metadataFilterOf, type TokenResponse } from "./schema";
import { decryptData } from "./sealing";
import type { TokenRow } from "./storage";
import * as storage from "./storage";
import * as purges from "./storage-purges";
import * as writes from "./storage-writes";

export async function getToken(context: TenantContext, principal: Principal, id: string): Promise<TokenResponse> {
  const row = await findLiveToken(context, id, Date.now());
  const transform = accessTo(principal, "token:read", containersOf(row), row.id);
  // A browser's key learns nothing of tokens it may not read, not even that they exist.
  if (!transform && isBrowserKey(principal)) throw new NotFoundError(`Token ${id}`);
  if (!transform) throw new ForbiddenError(`token:read is not granted on any container of token ${id}`);
  const keys = await context.keys();
  return present(principal, row, transform, () => decryptData(keys, row));
}

/**
 * A page of the tenant's live tokens, newest first, among the containers where the principal holds
 * token:read, filtered by ids, types and metadata (every pair must match, case-insensitively).
 * Each token's data follows the principal's token:read transform for it.
 */
export async function listTokens(context: TenantContext, principal: Principal, query: ListTokens): Promise<Page<TokenResponse>> {
  const granted = grantedContainers(principal, "token:read");
  const { rows, total } = await storage.liveTokensPage(
    context.db,
    context.tenantId,
    {
      ids: query.id,
      types: query.type,
      metadata: [...new Map(metadataFilterOf(query).reverse())],
      containerPrefixes: granted === null ? null : granted.map((grant) => grant.container),
      page: query.page,
      size: query.size,
    },
    Date.now(),
  );
  return pageOf(await presentTokens(context, principal, "token:read", rows), total, query.page, query.size);
}

/** Removes the token, its ciphertext and its index rows at once. */
export async function deleteToken(context: TenantContext, principal: Principal, id: string): Promise<void> {
  context.requireWritable();
  const now = Date.now();
  const row = await findLiveToken(context, id, now);
  requireOnTokenContainers(principal, "token:delete", containersOf(row), row.id);
  if (!(await writes.deleteToken(context.db.$client, context.writeFence(now), row.id, now))) throw new NotFoundError(`Token ${id}`);
  context.audit.describe({ event: { type: "token.deleted", data: { token: { id: row.id } } } });
}

/** Decrypts the rows (of the principal's tenant) and applies each one's access transform for the permission. */
export async function presentTokens(
  context: TenantContext,
  principal: Principal,
  permission: TokenPermission,
  rows: TokenRow[],
): Promise<TokenResponse[]> {
  const keys = await context.keys();
  return Promise.all(
    rows.map((row) =>
      present(principal, row, accessTo(principal, permission, containersOf(row), row.id) ?? "redact", () => decryptData(keys, row)),
    ),
  );
}

/** Called by the scheduled handler, for every tenant in every data database. */
export async function purgeExpiredTokens(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) {
    for (const token of await purges.purgeExpiredTokens(db.$client, now)) {
      const entry = { tenantId: token.tenantId, entityType: "token", entityId: token.id, operation: "delete" } as const;
      context.audit.record({ ...entry, message: "Deleted expired token" });
      purged += 1;
    }
  }
  return purged;
}

export async function findLiveToken(context: TenantContext, id: string, now: number): Promise<TokenRow> {
  const row = await storage.findLiveToken(context.db, context.tenantId, normalTokenId(id), now);
  if (!row) throw new NotFoundError(`Token ${id}`);
  return row;
}
