import {
  accessTo,
  grantedContainers,
  type Principal,
  requireOnEveryContainer,
  stricter,
  type Transform,
  useTransform,
} from "../auth/access";
import type { TokenPermission } from "../auth/permissions";
import type { RequestContext, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import {
  addFieldError,
  ConflictError,
  type FieldErrors,
  ForbiddenError,
  NotFoundError,
  ProblemError,
  type ShownToken,
  ValidationError,
} from "../errors";
import { applyMergePatch } from "../http/json";
import { isoTime, type Page, pageOf } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { cvcDeadlineOf, hasCvc } from "./cvc";
import { answerLostRaces, deduplicate, duplicateOfUpdate } from "./deduplication";
import { definitionOf, evaluate, fieldErrorCollector, type TokenDefinition } from "./definition";
import { WorkBudget } from "./expressions";
import { canonicalJson } from "./filter-registry";
import { claimTokenIds, wantedIdOf } from "./id-assignment";
import { normalTokenId } from "./id-format";
import { maskOf } from "./mask-templates";
import { containersOf, metadataOf, present, searchIndexesOf, shownData, tokenEventData } from "./presentation";
import {
  type CreatedTokenResponse,
  type CreateToken,
  CreateTokenBody,
  type ListTokens,
  metadataFilterOf,
  type TokenResponse,
  type UpdatedTokenResponse,
  type UpdateToken,
} from "./schema";
import { decryptData, keepPreviousFingerprint, sealToken } from "./sealing";
import type { TokenRow } from "./storage";
import * as storage from "./storage";
import { findTokenRequests, type JsonPath, jsonPath, substituteTokens } from "./tokenize";

export type { CreatedTokenResponse, CreateToken, TokenResponse, UpdatedTokenResponse, UpdateToken } from "./schema";
export type { TokenRow } from "./storage";

interface CreateRequest {
  input: CreateToken;
  /** Where the request sits in a tokenize payload; absent for POST /tokens. */
  path?: JsonPath;
}

/** Validates a create request from outside HTTP (the sandbox's `bt` client): a 400 when invalid. */
export function parseCreateToken(input: unknown): CreateToken {
  const parsed = CreateTokenBody.safeParse(input);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  return parsed.data;
}

export async function createToken(context: TenantContext, principal: Principal, input: CreateToken): Promise<CreatedTokenResponse> {
  const [created] = await createTokens(context, principal, [{ input }]);
  context.audit.describe(createdTokenEntry(created!));
  return created!;
}

/** The audit of one token a call created: the event, or a note that an existing token was returned. */
function createdTokenEntry(token: CreatedTokenResponse) {
  return token.deduplicated
    ? { entityId: token.id, message: "deduplicated, the existing token returned" }
    : { entityId: token.id, event: { type: "token.created", data: tokenEventData(token) } };
}

/**
 * Tokenizes any JSON, all or nothing: every request is validated and evaluated before anything is
 * written, and the new tokens go in one batch. A primitive leaf is answered with its token's id,
 * a create request with its token.
 */
export async function tokenize(context: TenantContext, principal: Principal, payload: unknown): Promise<unknown> {
  const found = findTokenRequests(payload);
  const errors: FieldErrors = {};
  const requests: CreateRequest[] = [];
  for (const { path, request } of found) {
    const parsed = CreateTokenBody.safeParse(request);
    if (parsed.success) requests.push({ input: parsed.data, path });
    else for (const issue of parsed.error.issues) addFieldError(errors, jsonPath([...path, ...issue.path]), issue.message);
  }
  if (Object.keys(errors).length > 0) throw ValidationError.summarised("Nothing was tokenized", errors);
  const created = await createTokens(context, principal, requests);
  context.audit.describe({ message: `${created.length} tokens` });
  for (const token of created) {
    context.audit.record({ entityType: "token", operation: "create", message: "Created token (tokenize)", ...createdTokenEntry(token) });
  }
  return substituteTokens(
    payload,
    found.map(({ path, leaf }, i) => ({ path, token: leaf ? created[i]!.id : created[i] })),
  );
}

export async function getToken(context: TenantContext, principal: Principal, id: string): Promise<TokenResponse> {
  const row = await findLiveToken(context, id, Date.now());
  const transform = accessTo(principal, "token:read", containersOf(row));
  if (!transform) throw new ForbiddenError(`token:read is not granted on any container of token ${id}`);
  const keys = await context.keys();
  return present(row, transform, () => decryptData(keys, row));
}

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
  let row = await findLiveToken(context, id, Date.now());
  const keys = await context.keys();
  for (let attempt = 1; ; attempt++) {
    const now = Date.now();
    requireOnEveryContainer(principal, "token:update", containersOf(row));
    const stored = await decryptData(keys, row);
    const definition = patchedDefinition(row, stored, patch);
    requireOnEveryContainer(principal, "token:update", definition.containers);
    const added = definition.containers.filter((container) => !containersOf(row).includes(container));
    requireOnEveryContainer(principal, "token:create", added);
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
    if (await storage.replaceToken(context.db.$client, sealed, row.ciphertext)) {
      const transform = accessTo(principal, "token:update", definition.containers) ?? "redact";
      const updated = await present(sealed.row, transform, () => definition.data);
      context.audit.describe({ event: { type: "token.updated", data: tokenEventData(updated) } });
      return { ...updated, deduplicated: false };
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
  if (accessTo(principal, "token:update", [...before, ...definition.containers]) === "reveal") return;
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
  const transform = accessTo(principal, "token:read", containersOf(row));
  const token = await present(row, transform ?? "redact", () => decryptData(keys, row));
  if (transform !== null) return { ...token, deduplicated: true };
  const { metadata: _metadata, search_indexes: _indexes, fingerprint_expression: _expression, mask: _mask, ...redacted } = token;
  return { ...redacted, deduplicated: true };
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
  requireOnEveryContainer(principal, "token:delete", containersOf(row));
  if (!(await storage.deleteToken(context.db.$client, context.tenantId, row.id, now))) throw new NotFoundError(`Token ${id}`);
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
    rows.map((row) => present(row, accessTo(principal, permission, containersOf(row)) ?? "redact", () => decryptData(keys, row))),
  );
}

/**
 * Detokenization: the data of each token by id, under the principal's token:use transform. An
 * unknown, deleted or expired id is a 400; a token the principal may not use (no rule, or a rule
 * that redacts it, or masks a token without a mask) is a 403. One query for all ids.
 */
export async function useTokens(context: TenantContext, principal: Principal, ids: string[]): Promise<Map<string, unknown>> {
  const byId = await usableRows(context, ids);
  const usable = ids.map((id) => ({ id, ...checkedUse(principal, id, byId.get(normalTokenId(id))) }));
  const keys = await context.keys();
  for (const { row } of usable)
    context.audit.record({ entityType: "token", entityId: row.id, operation: "use", message: "Used token (detokenized)" });
  const shown = await Promise.all(usable.map(({ row, transform }) => shownData(row, transform, () => decryptData(keys, row))));
  return new Map(
    usable.map(({ id, row, transform }, i) => {
      // A stored mask that no longer evaluates shows nothing, as a redacting rule would.
      if (!("data" in shown[i]!)) throw new ForbiddenError(`The token:use rule for token ${id} redacts its data`);
      const { data } = shown[i]!;
      context.revealed.add(data);
      context.revealed.tokens.set(row.id, { transform, cvcExpiresAt: row.cvcExpiresAt !== null && hasCvc(data) ? row.cvcExpiresAt : null });
      return [id, data];
    }),
  );
}

/**
 * Why a fresh detokenization by the principal would now refuse a token an earlier one showed, or
 * show less of it (masked where it was revealed); null when it would show each as before.
 */
export async function shownLessNow(
  context: TenantContext,
  principal: Principal,
  shown: Record<string, ShownToken["transform"]>,
): Promise<string | null> {
  const ids = Object.keys(shown);
  const byId = await usableRows(context, ids);
  for (const id of ids) {
    try {
      const { transform } = checkedUse(principal, id, byId.get(id));
      if (shown[id] === "reveal" && transform !== "reveal") return `The token:use rule for token ${id} now masks its data`;
    } catch (error) {
      if (error instanceof ProblemError) return error.message;
      throw error;
    }
  }
  return null;
}

/** The live tokens among the ids, by normal id; only the columns detokenization reads, as it runs on every proxied call with references. */
async function usableRows(context: TenantContext, ids: string[]): Promise<Map<string, storage.UsableToken>> {
  const wanted = [...new Set(ids.map(normalTokenId))];
  const rows = await storage.usableTokens(context.db.$client, context.tenantId, wanted, Date.now());
  return new Map(rows.map((row) => [row.id, row]));
}

/** The token and how a detokenization by the principal shows it: a 400 when it is gone, a 403 when its rule redacts it. */
function checkedUse(
  principal: Principal,
  id: string,
  row: storage.UsableToken | undefined,
): { row: storage.UsableToken; transform: ShownToken["transform"] } {
  if (!row) throw new ValidationError(`Token ${id} does not exist or has expired`);
  const transform = useTransform(principal, id, containersOf(row));
  if (transform === "redact" || (transform === "mask" && row.mask === null)) {
    throw new ForbiddenError(`The token:use rule for token ${id} redacts its data`);
  }
  return { row, transform };
}

/** Called by the scheduled handler, for every tenant in every data database. */
export async function purgeExpiredTokens(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) {
    for (const token of await storage.purgeExpiredTokens(db.$client, now)) {
      const entry = { tenantId: token.tenantId, entityType: "token", entityId: token.id, operation: "delete" } as const;
      context.audit.record({ ...entry, message: "Deleted expired token" });
      purged += 1;
    }
  }
  return purged;
}

/**
 * Creates the tokens of one call, all or nothing: each request is checked against the caller's
 * grants, evaluated and given its id; deduplicating requests are answered with existing tokens;
 * the rest are sealed and written in one batch.
 */
async function createTokens(context: TenantContext, principal: Principal, requests: CreateRequest[]): Promise<CreatedTokenResponse[]> {
  if (requests.length === 0) return [];
  context.requireWritable();
  const definitions = requests.map((request) => definitionOf(request.input));
  for (const [i, definition] of definitions.entries()) {
    requireOnEveryContainer(principal, "token:create", definition.containers, whereIs(requests[i]!.path));
  }
  const errors: FieldErrors = {};
  const reports = requests.map((request) => fieldErrorCollector(errors, request.path));
  const work = definitions.map((definition) => WorkBudget.of(definition.data));
  const evaluated = definitions.map((definition, i) => evaluate(definition, reports[i]!, work[i]!));
  const wanted = requests.map((request, i) => wantedIdOf(request.input, definitions[i]!.data, reports[i]!, work[i]!));
  if (Object.keys(errors).length > 0) {
    throw ValidationError.summarised(requests[0]!.path ? "Nothing was tokenized" : "The token was not created", errors);
  }

  const keys = await context.keys();
  const now = Date.now();
  const dataOf = (i: number) => definitions[i]!.data;
  const ids = await claimTokenIds(context.db, context.tenantId, wanted, dataOf, now);
  const sealed = await Promise.all(
    definitions.map((definition, i) =>
      sealToken(keys, definition, evaluated[i]!, {
        id: ids[i]!.id,
        tenantId: context.tenantId,
        createdBy: principal.applicationId,
        createdAt: now,
        modifiedBy: principal.applicationId,
        modifiedAt: now,
        cvcExpiresAt: cvcDeadlineOf(definition, now, context.config),
      }),
    ),
  );
  const deduplicating = requests.map((request) => request.input.deduplicate_token === true);
  const outcomes = await deduplicate(context.db, principal, sealed, deduplicating, dataOf, now);
  const refused = outcomes.flatMap((outcome, i) => (outcome.inserted && ids[i]!.taken ? [i] : []));
  if (refused.length > 0) {
    throw new ConflictError(refused.map((i) => `Token id ${ids[i]!.id} is already taken${whereIs(requests[i]!.path)}`).join("; "));
  }
  // A deduplicating token is written only if no duplicate in the caller's reach is live by then.
  const scope = grantedContainers(principal, "token:create")?.map(({ container }) => container) ?? null;
  outcomes.forEach((outcome, i) => {
    if (outcome.inserted && deduplicating[i]) outcome.inserted.unlessDuplicateIn = scope;
  });
  const inserted = outcomes.flatMap((outcome) => (outcome.inserted ? [outcome.inserted] : []));
  const chosenIds = outcomes.flatMap((outcome, i) => (outcome.inserted && wanted[i]!.chosen ? [ids[i]!.id] : []));
  if (inserted.length > 0) {
    let written: number;
    try {
      written = await storage.insertTokens(context.db.$client, inserted, chosenIds, now);
    } catch (error) {
      if (!storage.isTakenIdError(error)) throw error;
      throw new ConflictError("A chosen token id was taken by another request meanwhile; nothing was created");
    }
    if (written < inserted.length) await answerLostRaces(context.db, principal, outcomes, now);
  }

  return Promise.all(
    outcomes.map(async ({ row, data, inserted }) => {
      const token = await present(row, createdTransform(principal, row, inserted !== undefined), data ?? (() => decryptData(keys, row)));
      return { ...token, deduplicated: inserted === undefined };
    }),
  );
}

/**
 * How a create answers a token: a new one under the caller's token:create rule (it supplied the
 * data); an existing one that deduplication answered also under its token:read rule, whichever is
 * stricter (none is redact), since only its fingerprint matched what the caller sent: its other
 * members (a card's cvc and expiry) the caller never supplied.
 */
function createdTransform(principal: Principal, row: TokenRow, created: boolean): Transform {
  const containers = containersOf(row);
  const create = accessTo(principal, "token:create", containers) ?? "redact";
  return created ? create : stricter(create, accessTo(principal, "token:read", containers) ?? "redact");
}

async function findLiveToken(context: TenantContext, id: string, now: number): Promise<TokenRow> {
  const row = await storage.findLiveToken(context.db, context.tenantId, normalTokenId(id), now);
  if (!row) throw new NotFoundError(`Token ${id}`);
  return row;
}

/** Where a request sits in a tokenize payload, for messages; nothing for POST /tokens. */
function whereIs(path?: JsonPath): string {
  return path ? ` (at ${jsonPath(path)})` : "";
}
