import { and, asc, desc, eq, gt, isNull, ne, or, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { accessTo, grantedContainers, type Principal, type Transform } from "../auth/access";
import type { TokenPermission } from "../auth/permissions";
import type { RequestContext, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import type { Database } from "../db/client";
import { selectPage } from "../db/pages";
import { tokens } from "../db/schema";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError, type FieldErrors } from "../http/problem";
import { auditFieldsOf, isoTime, pageOf, type Page } from "../http/schemas";
import { applyMergePatch } from "../http/json";
import { fieldPath, validationErrorOf } from "../http/validation";
import { evaluateExpression, ExpressionError, type ExpressionScope } from "./expressions";
import {
  CreateTokenBody,
  metadataFilterOf,
  type CreatedTokenResponse,
  type CreateToken,
  type ListTokens,
  type TokenResponse,
  type UpdatedTokenResponse,
  type UpdateToken,
} from "./schema";
import * as storage from "./storage";
import type { SealedToken, TokenRow } from "./storage";
import { isAliasExpression, normalTokenId, renderAliasId } from "./ids";
import { cvcDeadlineOf, withoutCvc } from "./cvc";
import { applyMask, checkMask, maskColumnOf, maskOf } from "./masks";
import { findTokenRequests, jsonPath, substituteTokens, type JsonPath } from "./tokenize";
import { TOKEN_TYPE_RULES, type Mask, type TokenType } from "./types";

export type { TokenRow } from "./storage";
export type { CreatedTokenResponse, CreateToken, TokenResponse, UpdatedTokenResponse, UpdateToken } from "./schema";

/** A token as the request defines it, with the type's defaults filled in. */
interface TokenDefinition {
  type: TokenType;
  data: unknown;
  metadata: Record<string, string>;
  containers: string[];
  searchIndexes: string[];
  fingerprintExpression: string;
  mask: Mask | null;
  expiresAt: number | null;
}

interface CreateRequest {
  input: CreateToken;
  /** Where the request sits in a tokenize payload; absent for POST /tokens. */
  path?: JsonPath;
}

/** The condition every read of tokens carries: an expired token behaves as deleted. */
export function tokenIsLive(now: number): SQL {
  return or(isNull(tokens.expiresAt), gt(tokens.expiresAt, now))!;
}

/** Validates a create request from outside HTTP (the sandbox's `bt` client): a 400 when invalid. */
export function parseCreateToken(input: unknown): CreateToken {
  const parsed = CreateTokenBody.safeParse(input);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  return parsed.data;
}

export async function createToken(context: TenantContext, principal: Principal, input: CreateToken): Promise<CreatedTokenResponse> {
  const [created] = await createTokens(context, principal, [{ input }]);
  return created!;
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
    else for (const issue of parsed.error.issues) (errors[jsonPath([...path, ...issue.path])] ??= []).push(issue.message);
  }
  if (Object.keys(errors).length > 0) throw invalid("Nothing was tokenized", errors);
  const created = await createTokens(context, principal, requests);
  return substituteTokens(
    payload,
    found.map(({ path, leaf }, i) => ({ path, token: leaf ? created[i]!.id : created[i] })),
  );
}

export async function getToken(context: TenantContext, principal: Principal, id: string): Promise<TokenResponse> {
  const row = await findLiveToken(context.db, principal.tenantId, id, Date.now());
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
export async function updateToken(context: TenantContext, principal: Principal, id: string, patch: UpdateToken): Promise<UpdatedTokenResponse> {
  const db = context.db;
  const now = Date.now();
  const row = await findLiveToken(db, principal.tenantId, id, now);
  requireOnEveryContainer(principal, "token:update", containersOf(row));
  const keys = await context.keys();
  const data = await decryptData(keys, row);
  const merged = CreateTokenBody.safeParse({
    type: row.type,
    data: patch.data === undefined ? data : applyMergePatch(data, patch.data),
    metadata:
      patch.metadata === undefined ? metadataOf(row) : patch.metadata === null ? null : applyMergePatch(metadataOf(row), patch.metadata),
    containers: patch.containers === undefined ? containersOf(row) : patch.containers,
    search_indexes: patch.search_indexes === undefined ? (JSON.parse(row.searchIndexes) as string[]) : patch.search_indexes,
    fingerprint_expression: patch.fingerprint_expression === undefined ? row.fingerprintExpression : patch.fingerprint_expression,
    mask: patch.mask === undefined ? maskOf(row.mask) : patch.mask,
    expires_at: patch.expires_at === undefined ? isoTime(row.expiresAt) : patch.expires_at,
  });
  if (!merged.success) throw validationErrorOf(merged.error);
  const definition = definitionOf(merged.data);
  requireOnEveryContainer(principal, "token:update", definition.containers);
  const errors: FieldErrors = {};
  const evaluated = evaluate(definition, (field, message) => (errors[fieldPath(field)] ??= []).push(message));
  if (Object.keys(errors).length > 0) throw invalid("The token was not updated", errors);
  const sealed = await sealToken(keys, definition, evaluated, {
    id: row.id,
    tenantId: row.tenantId,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    modifiedBy: principal.applicationId,
    modifiedAt: now,
    // The cvc's window starts when the data is written, not when other members change.
    cvcExpiresAt: patch.data === undefined ? row.cvcExpiresAt : cvcDeadlineOf(definition, now, context.config),
  });
  if (patch.deduplicate_token) {
    const duplicate = await findDuplicateOf(db, principal, sealed.row, now);
    if (duplicate) return { ...(await presentDuplicate(keys, principal, duplicate)), deduplicated: true };
  }
  const [update] = await db.$client.batch(storage.replaceToken(db.$client, sealed, row.ciphertext));
  if (update?.meta.changes !== 1) {
    await findLiveToken(db, principal.tenantId, id, Date.now());
    throw new ConflictError(`Token ${id} was changed by another request meanwhile; read it and retry`);
  }
  const transform = accessTo(principal, "token:update", definition.containers) ?? "redact";
  return { ...(await present(sealed.row, transform, () => definition.data)), deduplicated: false };
}

/**
 * The oldest other live token of the same type and fingerprint in a container where the principal
 * may update tokens (as creation deduplicates only within the caller's reach).
 */
async function findDuplicateOf(db: Database, principal: Principal, updated: TokenRow, now: number): Promise<TokenRow | undefined> {
  const found = await existingDuplicates(db, principal, "token:update", [updated.fingerprint], now, updated.id);
  return found.get(identityOf(updated));
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
  const metadata = new Map(metadataFilterOf(query).reverse());
  const conditions = [
    eq(tokens.tenantId, principal.tenantId),
    tokenIsLive(Date.now()),
    query.id.length > 0 ? inJsonArray(tokens.id, query.id) : undefined,
    query.type.length > 0 ? inJsonArray(tokens.type, query.type) : undefined,
    metadata.size > 0 ? holdsMetadata([...metadata]) : undefined,
    granted === null ? undefined : inContainers(granted.map((grant) => grant.container)),
  ];
  const { rows, total } = await selectPage(context.db, tokens, and(...conditions), [desc(tokens.createdAt), desc(tokens.id)], query);
  return pageOf(await presentTokens(context, principal, "token:read", rows), total, query.page, query.size);
}

/** Every (key, value) pair is among the token's (lower-cased) metadata; the pairs travel as one JSON parameter. */
function holdsMetadata(pairs: [string, string][]): SQL {
  return sql`(SELECT count(DISTINCT m.key) FROM token_metadata AS m, json_each(${JSON.stringify(pairs)}) AS f
    WHERE m.tenant_id = ${tokens.tenantId} AND m.key = f.value ->> 0 AND m.value = f.value ->> 1 AND m.token_id = ${tokens.id}) = ${pairs.length}`;
}

/** One of the token's containers lies under one of the prefixes (a rule's container covers its sub-containers). */
function inContainers(prefixes: string[]): SQL {
  return sql`EXISTS (SELECT 1 FROM token_containers AS a, json_each(${JSON.stringify(prefixes)}) AS p
    WHERE a.tenant_id = ${tokens.tenantId} AND a.token_id = ${tokens.id} AND substr(a.container, 1, length(p.value)) = p.value)`;
}

/** Removes the token, its ciphertext and its index rows at once. */
export async function deleteToken(context: TenantContext, principal: Principal, id: string): Promise<void> {
  const db = context.db;
  const now = Date.now();
  const row = await findLiveToken(db, principal.tenantId, id, now);
  requireOnEveryContainer(principal, "token:delete", containersOf(row));
  const results = await db.$client.batch(storage.deleteToken(db.$client, principal.tenantId, row.id, now));
  if (results.at(-1)?.meta.changes !== 1) throw new NotFoundError(`Token ${id}`);
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
      present(row, accessTo(principal, permission, containersOf(row)) ?? "redact", () => decryptData(keys, row)),
    ),
  );
}

/**
 * Detokenization: the data of each token by id, under the principal's token:use transform. An
 * unknown, deleted or expired id is a 400; a token the principal may not use (no rule, or a rule
 * that redacts it, or masks a token without a mask) is a 403. One query for all ids.
 */
export async function useTokens(context: TenantContext, principal: Principal, ids: string[]): Promise<Map<string, unknown>> {
  const wanted = [...new Set(ids.map(normalTokenId))];
  // Only the columns detokenization reads: this runs on every proxied call that holds references.
  const rows = await storage.usableTokens(context.db.$client, principal.tenantId, wanted, Date.now());
  const byId = new Map(rows.map((row) => [row.id, row]));
  const usable = ids.map((id) => {
    const row = byId.get(normalTokenId(id));
    if (!row) throw new ValidationError(`Token ${id} does not exist or has expired`);
    const transform = useTransform(principal, id, containersOf(row));
    if (transform === "redact" || (transform === "mask" && row.mask === null)) {
      throw new ForbiddenError(`The token:use rule for token ${id} redacts its data`);
    }
    return { id, row, transform };
  });
  const keys = await context.keys();
  const shown = await Promise.all(usable.map(({ row, transform }) => shownData(row, transform, () => decryptData(keys, row))));
  return new Map(usable.map(({ id }, i) => [id, shown[i]!.data]));
}

/** Called by the scheduled handler, for every tenant in every data database. */
export async function purgeExpiredTokens(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) purged += await storage.purgeExpiredTokens(db.$client, now);
  return purged;
}

async function createTokens(context: TenantContext, principal: Principal, requests: CreateRequest[]): Promise<CreatedTokenResponse[]> {
  if (requests.length === 0) return [];
  const definitions = requests.map((request) => definitionOf(request.input));
  definitions.forEach((definition, i) =>
    requireOnEveryContainer(principal, "token:create", definition.containers, requests[i]!.path),
  );
  const errors: FieldErrors = {};
  const reportFor =
    (i: number): Report =>
    (field, message) =>
      (errors[fieldNameOf(requests[i]!, field)] ??= []).push(message);
  const evaluated = definitions.map((definition, i) => evaluate(definition, reportFor(i)));
  const wanted = requests.map((request, i) => wantedIdOf(request.input, definitions[i]!.data, reportFor(i)));
  if (Object.keys(errors).length > 0) throw invalid(requests[0]!.path ? "Nothing was tokenized" : "The token was not created", errors);

  const db = context.db;
  const keys = await context.keys();
  const now = Date.now();
  const ids = await claimTokenIds(db, principal.tenantId, wanted, definitions, now);
  const sealed = await Promise.all(
    definitions.map((definition, i) =>
      sealToken(keys, definition, evaluated[i]!, {
        id: ids[i]!.id,
        tenantId: principal.tenantId,
        createdBy: principal.applicationId,
        createdAt: now,
        modifiedBy: principal.applicationId,
        modifiedAt: now,
        cvcExpiresAt: cvcDeadlineOf(definition, now, context.config),
      }),
    ),
  );
  const outcomes = await deduplicate(db, principal, requests, sealed, definitions, now);
  const refused = outcomes.flatMap((outcome, i) => (outcome.inserted && ids[i]!.taken ? [i] : []));
  if (refused.length > 0) {
    throw new ConflictError(refused.map((i) => `Token id ${ids[i]!.id} is already taken${whereIs(requests[i]!.path)}`).join("; "));
  }
  // A deduplicating token is written only if no duplicate in the caller's reach is live by then.
  const scope = grantedContainers(principal, "token:create")?.map(({ container }) => container) ?? null;
  outcomes.forEach((outcome, i) => {
    if (outcome.inserted && requests[i]!.input.deduplicate_token) outcome.inserted.unlessDuplicateIn = scope;
  });
  const inserted = outcomes.flatMap((outcome) => (outcome.inserted ? [outcome.inserted] : []));
  const chosenIds = outcomes.flatMap((outcome, i) => (outcome.inserted && wanted[i]!.chosen ? [ids[i]!.id] : []));
  if (inserted.length > 0) {
    let results: D1Result[];
    try {
      results = await db.$client.batch(storage.insertTokens(db.$client, inserted, chosenIds, now));
    } catch (error) {
      if (!storage.isTakenIdError(error)) throw error;
      throw new ConflictError("A chosen token id was taken by another request meanwhile; nothing was created");
    }
    if ((results[storage.tokensStatement(chosenIds)]?.meta.changes ?? 0) < inserted.length) {
      await answerLostRaces(db, principal, outcomes, now);
    }
  }

  return Promise.all(
    outcomes.map(async ({ row, data, inserted }) => {
      const transform = accessTo(principal, "token:create", containersOf(row)) ?? "redact";
      const token = await present(row, transform, data ?? (() => decryptData(keys, row)));
      return { ...token, deduplicated: inserted === undefined };
    }),
  );
}

/**
 * Deduplicating creates that a concurrent create of the same value beat to the insert: each is
 * answered with the token that won, as if it had been there when the request began.
 */
async function answerLostRaces(db: Database, principal: Principal, outcomes: Outcome[], now: number): Promise<void> {
  const attempted = outcomes.flatMap((outcome) => (outcome.inserted ? [outcome.inserted] : []));
  const written = await storage.writtenTokenIds(db.$client, attempted);
  const lost = outcomes.filter((outcome) => outcome.inserted && !written.has(outcome.inserted.row.id));
  const winners = await existingDuplicates(db, principal, "token:create", lost.map(({ row }) => row.fingerprint), now);
  const lostRows = new Set(lost.map(({ row }) => row));
  // Requests of the same call that deduplicated onto a lost token follow it to the winner.
  for (const outcome of outcomes.filter(({ row }) => lostRows.has(row))) {
    const winner = winners.get(identityOf(outcome.row));
    if (!winner) throw new ConflictError("A duplicate of this token was created and removed meanwhile; retry the request");
    outcome.row = winner;
    outcome.inserted = undefined;
    outcome.data = undefined;
  }
}

/** A request's id before it is checked against the tenant's tokens. */
interface WantedId {
  id: string;
  /** Chosen by the client (literally or by an alias), so it may be taken; a random UUID never is. */
  chosen: boolean;
  /** The alias expression that rendered the id: drawn again when the id is taken. */
  alias?: string;
}

interface ClaimedId {
  id: string;
  /** A literal id that a live token, or an earlier request of the same call, already holds. */
  taken: boolean;
}

/** How often a taken alias is drawn again before a random UUID stands in. */
const ALIAS_DRAWS = 5;

function wantedIdOf(input: CreateToken, data: unknown, report: Report): WantedId {
  if (input.id === undefined || input.id === null) return { id: crypto.randomUUID(), chosen: false };
  if (!isAliasExpression(input.id)) return { id: normalTokenId(input.id), chosen: true };
  const rendered = renderAliasId(input.id, data);
  if ("problem" in rendered) report(["id"], rendered.problem);
  return { id: "id" in rendered ? rendered.id : "", chosen: true, alias: input.id };
}

/**
 * Checks the chosen ids against the tenant's live tokens and each other, in request order. A taken
 * alias is drawn again (alias filters are random) up to ALIAS_DRAWS times, then a random UUID
 * stands in, as the original interface does when no unique alias can be generated. A taken literal
 * id is marked: it is refused (409) unless deduplication answers the request with an existing token.
 */
async function claimTokenIds(
  db: Database,
  tenantId: string,
  wanted: WantedId[],
  definitions: TokenDefinition[],
  now: number,
): Promise<ClaimedId[]> {
  const held = await storage.liveTokenIds(db.$client, tenantId, wanted.filter((w) => w.chosen).map((w) => w.id), now);
  const claimed = new Set<string>();
  const ids: ClaimedId[] = [];
  let redraw: number[] = [];
  wanted.forEach((w, i) => {
    const taken = w.chosen && (held.has(w.id) || claimed.has(w.id));
    if (taken && w.alias !== undefined) {
      redraw.push(i);
    } else {
      claimed.add(w.id);
      ids[i] = { id: w.id, taken };
    }
  });
  for (let draw = 0; draw < ALIAS_DRAWS && redraw.length > 0; draw++) {
    const drawn = redraw.map((i) => ({ i, rendered: renderAliasId(wanted[i]!.alias!, definitions[i]!.data) }));
    const candidates = drawn.flatMap(({ rendered }) => ("id" in rendered ? [rendered.id] : []));
    const heldNow = await storage.liveTokenIds(db.$client, tenantId, candidates, now);
    redraw = [];
    for (const { i, rendered } of drawn) {
      if ("id" in rendered && !heldNow.has(rendered.id) && !claimed.has(rendered.id)) {
        claimed.add(rendered.id);
        ids[i] = { id: rendered.id, taken: false };
      } else {
        redraw.push(i);
      }
    }
  }
  for (const i of redraw) ids[i] = { id: crypto.randomUUID(), taken: false };
  return ids;
}

/** What a create request ends in: a new token to insert, or an existing token it duplicates. */
interface Outcome {
  row: TokenRow;
  /** Present when the token is new and must be written. */
  inserted?: SealedToken;
  /** The plaintext when this request supplied it; absent for an existing token, which is decrypted. */
  data?: () => unknown;
}

/**
 * With `deduplicate_token`, a request whose type and fingerprint match a live token the principal
 * may create in (the oldest such), or a token created earlier in the same request, gets that token.
 */
async function deduplicate(
  db: Database,
  principal: Principal,
  requests: CreateRequest[],
  sealed: SealedToken[],
  definitions: TokenDefinition[],
  now: number,
): Promise<Outcome[]> {
  const wanted = sealed.filter((_, i) => requests[i]!.input.deduplicate_token).map((token) => token.row.fingerprint);
  const seen = new Map<string, Outcome>(
    [...(await existingDuplicates(db, principal, "token:create", wanted, now))].map(([identity, row]) => [identity, { row }]),
  );
  return sealed.map((token, i) => {
    const match = seen.get(identityOf(token.row));
    if (match && requests[i]!.input.deduplicate_token) return { row: match.row, data: match.data };
    const outcome: Outcome = { row: token.row, inserted: token, data: () => definitions[i]!.data };
    if (!match) seen.set(identityOf(token.row), outcome);
    return outcome;
  });
}

/** Tokens are duplicates when type and fingerprint are equal. */
function identityOf(row: Pick<TokenRow, "type" | "fingerprint">): string {
  return `${row.type}\u0000${row.fingerprint}`;
}

/**
 * The oldest live token per type and fingerprint in a container where the principal holds the
 * permission (token:create for creates, token:update for updates), other than `excludedId`.
 */
async function existingDuplicates(
  db: Database,
  principal: Principal,
  permission: TokenPermission,
  fingerprints: string[],
  now: number,
  excludedId?: string,
): Promise<Map<string, TokenRow>> {
  if (fingerprints.length === 0) return new Map();
  const rows = await db
    .select()
    .from(tokens)
    .where(
      and(
        eq(tokens.tenantId, principal.tenantId),
        inJsonArray(tokens.fingerprint, [...new Set(fingerprints)]),
        excludedId === undefined ? undefined : ne(tokens.id, excludedId),
        tokenIsLive(now),
      ),
    )
    .orderBy(asc(tokens.createdAt), asc(tokens.id));
  const oldest = new Map<string, TokenRow>();
  for (const row of rows) {
    if (!oldest.has(identityOf(row)) && accessTo(principal, permission, containersOf(row)) !== null) oldest.set(identityOf(row), row);
  }
  return oldest;
}

function definitionOf(input: CreateToken): TokenDefinition {
  const rules = TOKEN_TYPE_RULES[input.type];
  return {
    type: input.type,
    data: input.data,
    metadata: input.metadata ?? {},
    containers: [...new Set(input.containers ?? [rules.container])],
    searchIndexes: input.search_indexes ?? rules.defaultSearchIndexes ?? [],
    fingerprintExpression: input.fingerprint_expression ?? rules.fingerprintExpression,
    mask: input.mask ?? rules.mask,
    expiresAt: input.expires_at ? Date.parse(input.expires_at) : null,
  };
}

interface Evaluated {
  fingerprintSource: string;
  searchValues: string[];
}

type Report = (field: (string | number)[], message: string) => void;

/** Renders the token's expressions; each failure is reported against the member that holds it. */
function evaluate(definition: TokenDefinition, report: Report): Evaluated {
  const render = (field: (string | number)[], source: string, scope: ExpressionScope): string => {
    try {
      return evaluateExpression(source, scope);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      report(field, error.message);
      return "";
    }
  };
  const dataScope = { data: definition.data };
  const fingerprintSource = render(["fingerprint_expression"], definition.fingerprintExpression, {
    data: definition.data,
    metadata: definition.metadata,
  });
  if (fingerprintSource.trim() === "") report(["fingerprint_expression"], "must not evaluate to an empty value");
  const searchValues = definition.searchIndexes.map((source, i) => {
    const value = render(["search_indexes", i], source, dataScope);
    if (value.trim() === "") report(["search_indexes", i], `must evaluate to one value that is neither null nor empty: ${source}`);
    return value;
  });
  if (definition.mask !== null) checkMask(definition.mask, definition.data, report);
  return { fingerprintSource, searchValues };
}

async function sealToken(
  keys: TenantKeys,
  definition: TokenDefinition,
  evaluated: Evaluated,
  audit: Pick<TokenRow, "id" | "tenantId" | "createdBy" | "createdAt" | "modifiedBy" | "modifiedAt" | "cvcExpiresAt">,
): Promise<SealedToken> {
  const [ciphertext, fingerprint, blindIndexes] = await Promise.all([
    keys.encrypt(JSON.stringify(definition.data), audit.id),
    keys.fingerprint(definition.type, evaluated.fingerprintSource),
    Promise.all(evaluated.searchValues.map((value) => keys.blindIndex(value))),
  ]);
  const metadataPairs = Object.entries(definition.metadata).map(([key, value]) => [key.toLowerCase(), value.toLowerCase()] as [string, string]);
  return {
    row: {
      ...audit,
      type: definition.type,
      ciphertext,
      fingerprint,
      fingerprintExpression: definition.fingerprintExpression,
      mask: maskColumnOf(definition.mask),
      searchIndexes: JSON.stringify(definition.searchIndexes),
      metadata: JSON.stringify(definition.metadata),
      containers: JSON.stringify(definition.containers),
      expiresAt: definition.expiresAt,
    },
    metadata: [...new Map(metadataPairs.map((pair) => [JSON.stringify(pair), pair])).values()],
    blindIndexes: [...new Set(blindIndexes)],
  };
}

/** The data a transform shows: all of it, its mask (when the token has one), or none at all. */
async function shownData(row: Pick<TokenRow, "mask">, transform: Transform, data: () => unknown): Promise<{ data?: unknown }> {
  if (transform === "reveal") return { data: await data() };
  if (transform === "mask" && row.mask !== null) return { data: applyMask(maskOf(row.mask)!, await data()) };
  return {};
}

/** The token as the caller may see it: data revealed, masked (absent without a mask) or redacted. */
async function present(row: TokenRow, transform: Transform, data: () => unknown): Promise<TokenResponse> {
  const shown = await shownData(row, transform, data);
  return {
    id: row.id,
    type: row.type as TokenType,
    tenant_id: row.tenantId,
    ...shown,
    fingerprint: row.fingerprint,
    containers: containersOf(row),
    metadata: metadataOf(row),
    search_indexes: JSON.parse(row.searchIndexes) as string[],
    fingerprint_expression: row.fingerprintExpression,
    mask: maskOf(row.mask) as TokenResponse["mask"],
    expires_at: isoTime(row.expiresAt),
    ...auditFieldsOf(row),
  };
}

async function findLiveToken(db: Database, tenantId: string, id: string, now: number): Promise<TokenRow> {
  const [row] = await db
    .select()
    .from(tokens)
    .where(and(eq(tokens.tenantId, tenantId), eq(tokens.id, normalTokenId(id)), tokenIsLive(now)))
    .limit(1);
  if (!row) throw new NotFoundError(`Token ${id}`);
  return row;
}

/** Writes need the permission on every container involved, not just one of them. */
function requireOnEveryContainer(principal: Principal, permission: TokenPermission, containers: string[], path?: JsonPath) {
  const denied = containers.filter((container) => accessTo(principal, permission, [container]) === null);
  if (denied.length > 0) throw new ForbiddenError(`${permission} is not granted on container ${denied.join(", ")}${whereIs(path)}`);
}

/** Where a request sits in a tokenize payload, for messages; nothing for POST /tokens. */
function whereIs(path?: JsonPath): string {
  return path ? ` (at ${jsonPath(path)})` : "";
}

/**
 * Detokenizing needs token:use on every container of the token; when the containers' rules
 * differ, the most restrictive transform applies.
 */
function useTransform(principal: Principal, id: string, containers: string[]): Transform {
  const transforms = containers.map((container) => {
    const transform = accessTo(principal, "token:use", [container]);
    if (transform === null) throw new ForbiddenError(`token:use is not granted on container ${container} of token ${id}`);
    return transform;
  });
  return TRANSFORM_RESTRICTIVENESS.find((transform) => transforms.includes(transform)) ?? "redact";
}

const TRANSFORM_RESTRICTIVENESS: Transform[] = ["redact", "mask", "reveal"];

/** The token's data; a card's cvc is left out once its retention window has passed, cron or not. */
async function decryptData(keys: TenantKeys, row: Pick<TokenRow, "id" | "ciphertext" | "cvcExpiresAt">): Promise<unknown> {
  const data = JSON.parse(await keys.decrypt(row.ciphertext, row.id)) as unknown;
  return row.cvcExpiresAt !== null && row.cvcExpiresAt <= Date.now() ? withoutCvc(data) : data;
}

function containersOf(row: Pick<TokenRow, "containers">): string[] {
  return JSON.parse(row.containers) as string[];
}

function metadataOf(row: TokenRow): Record<string, string> {
  return JSON.parse(row.metadata) as Record<string, string>;
}

function fieldNameOf(request: CreateRequest, field: (string | number)[]): string {
  return request.path ? jsonPath([...request.path, ...field]) : fieldPath(field);
}

/** `column IN (…)` with the values as one JSON parameter, whatever their number. */
function inJsonArray(column: AnyColumn, values: string[]): SQL {
  return sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;
}


function invalid(summary: string, errors: FieldErrors): ValidationError {
  const details = Object.entries(errors)
    .map(([path, messages]) => `${path}: ${messages.join("; ")}`)
    .join(", ");
  return new ValidationError(`${summary}: ${details}`, errors);
}
