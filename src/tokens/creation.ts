/**
 * Creating tokens, one (POST /tokens, `bt.tokens.create`) or every request of a tokenize payload at
 * once: validate, evaluate the expressions, claim the ids, answer duplicates, seal and write in one
 * batch, and present each token as the caller may see it.
 */
import {
  accessTo,
  grantedContainers,
  isBrowserKey,
  type Principal,
  requireOnEveryContainer,
  stricter,
  type Transform,
} from "../auth/access";
import { isEncryptedData } from "../client-keys/jwe";
import { encryptedDataOpener } from "../client-keys/service";
import type { TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { addFieldError, ConflictError, type FieldErrors, ValidationError } from "../errors";
import { validationErrorOf } from "../http/validation";
import { cvcDeadlineOf } from "./cvc";
import { answerLostRaces, deduplicate, deduplicationRefusal, duplicateOfCreate, type Identity, type Outcome } from "./deduplication";
import { definitionOf, evaluate, fieldErrorCollector } from "./definition";
import { WorkBudget } from "./expressions";
import { claimTokenIds, wantedIdOf } from "./id-assignment";
import { containersOf, present, tokenEventData } from "./presentation";
import { type CreatedTokenResponse, type CreateToken, CreateTokenBody, dataRefusals } from "./schema";
import { decryptData, sealToken } from "./sealing";
import type { TokenRow } from "./storage";
import * as storage from "./storage";
import { insertTokens, isTakenIdError, type SealedToken } from "./storage-writes";
import { findTokenRequests, type JsonPath, jsonPath, substituteTokens, type TokenRequestAt } from "./tokenize";
import { holdsCardNumber } from "./types";

interface CreateRequest {
  input: CreateToken;
  /** Where the request sits in a tokenize payload; absent for POST /tokens. */
  path?: JsonPath;
  /** Its data came as a JWE (src/client-keys/): the caller never held the plaintext it is answered. */
  encrypted?: boolean;
}

/**
 * A key that a browser holds gets a random id: whether a chosen one is taken tells which ids exist, and a
 * chosen one could claim an id the merchant's server is about to use, or one a token left on expiry.
 */
const CHOSEN_ID_REFUSAL = "is not available to public and session keys: the vault gives their tokens random ids";

/**
 * A key that a browser holds takes its type's expressions. A literal fingerprint or search index would
 * pass its token off as another value's: a server deduplicating the seller's bank account would be
 * answered the attacker's token, and a `data:` search would find it.
 */
export const EXPRESSION_REFUSAL = "is not available to public and session keys: their tokens take the type's expressions";
const EXPRESSION_MEMBERS = ["fingerprint_expression", "search_indexes", "mask"] as const;

/** The expression members a request sets, which a browser's key may not. */
export function browserRefusedExpressions(request: Partial<Record<(typeof EXPRESSION_MEMBERS)[number], unknown>>): string[] {
  return EXPRESSION_MEMBERS.filter((member) => request[member] != null);
}

/** Validates a create request from outside HTTP (the sandbox's `bt` client): a 400 when invalid. */
export function parseCreateToken(input: unknown): CreateToken {
  const parsed = CreateTokenBody.safeParse(input);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  return parsed.data;
}

/** A create of data the caller did not send itself: a token intent's, which its conversion consumes (src/token-intents/). */
export interface CreateFrom {
  /**
   * Statements that go first in the create's one batch and fail it when what they consume is gone. The
   * batch runs even when deduplication answers an existing token and there is nothing to insert.
   */
  consuming: (d1: D1Database, now: number) => D1PreparedStatement[];
}

/** `from`: where the data comes from, when the caller did not send it (see createdTransform). */
export async function createToken(
  context: TenantContext,
  principal: Principal,
  input: CreateToken,
  from?: CreateFrom,
): Promise<CreatedTokenResponse> {
  return answerCreatedToken(context, await createTokens(context, principal, [{ input }], from));
}

/**
 * POST /tokens answered again from its commit mark (src/idempotency/): the attempt that wrote the token
 * stopped before its answer was saved. `sentData`: the caller sent the data (false for a conversion).
 */
export async function answerCommittedToken(
  context: TenantContext,
  principal: Principal,
  outcome: unknown,
  sentData = true,
): Promise<CreatedTokenResponse> {
  return answerCreatedToken(context, await committedTokens(context, principal, outcome as CommittedCreate, sentData));
}

function answerCreatedToken(context: TenantContext, [created]: Created[]): CreatedTokenResponse {
  context.audit.describe(createdTokenEntry(created!));
  return created!.token;
}

/** A token one call created or deduplication answered: as the caller sees it, and its row, which its event describes. */
interface Created {
  token: CreatedTokenResponse;
  row: TokenRow;
}

/**
 * What a create's batch wrote, by request position: the outcome its idempotency commit mark seals,
 * from which its answer is made again when the attempt stopped before the answer was saved.
 */
interface CommittedCreate {
  /** When the batch was written: the created_at of its new tokens. */
  createdAt: number;
  tokens: {
    /** The token the request got: a new one of the batch, or an existing one deduplication answered. */
    id: string;
    /** It was new, so the batch wrote it, unless it was deduplicating and a duplicate went in first. */
    inserted: boolean;
    /** A deduplicating request's identity, to find the duplicate that won a race to the insert. */
    identity?: Identity;
    /** The request's data came as a JWE: answered as data the caller did not send. */
    encrypted?: true;
  }[];
}

/** The audit of one token a call created: the event, or a note that an existing token was returned. */
function createdTokenEntry({ token, row }: Created) {
  return token._extras.deduplicated
    ? { entityId: token.id, message: "deduplicated, the existing token returned" }
    : { entityId: token.id, event: { type: "token.created", data: tokenEventData(row) } };
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
  return answerTokenized(context, payload, found, await createTokens(context, principal, requests));
}

/**
 * POST /tokenize answered again from its commit mark (src/idempotency/): the attempt that wrote the
 * tokens stopped before its answer was saved. `payload` is the attempt's, so its requests are in the same places.
 */
export async function answerCommittedTokenize(
  context: TenantContext,
  principal: Principal,
  outcome: unknown,
  payload: unknown,
): Promise<unknown> {
  return answerTokenized(
    context,
    payload,
    findTokenRequests(payload),
    await committedTokens(context, principal, outcome as CommittedCreate),
  );
}

function answerTokenized(context: TenantContext, payload: unknown, found: TokenRequestAt[], created: Created[]): unknown {
  context.audit.describe({ message: `${created.length} tokens` });
  for (const token of created) {
    context.audit.record({ entityType: "token", operation: "create", message: "Created token (tokenize)", ...createdTokenEntry(token) });
  }
  return substituteTokens(
    payload,
    found.map(({ path, leaf }, i) => ({ path, token: leaf ? created[i]!.token.id : created[i]!.token })),
  );
}

/**
 * Creates the tokens of one call, all or nothing: each request is checked against the caller's
 * grants, evaluated and given its id; deduplicating requests are answered with existing tokens;
 * the rest are sealed and written in one batch.
 */
async function createTokens(context: TenantContext, principal: Principal, sent: CreateRequest[], from?: CreateFrom): Promise<Created[]> {
  if (sent.length === 0) return [];
  context.requireWritable();
  const requests = from ? sent : await openEncryptedData(context, sent);
  const definitions = requests.map((request) => definitionOf(request.input));
  for (const [i, definition] of definitions.entries()) {
    requireOnEveryContainer(principal, "token:create", definition.containers, whereIs(requests[i]!.path));
  }
  const errors: FieldErrors = {};
  const reports = requests.map((request) => fieldErrorCollector(errors, request.path));
  const work = definitions.map((definition) => WorkBudget.of(definition.data));
  const evaluated = definitions.map((definition, i) => evaluate(definition, reports[i]!, work[i]!));
  const wanted = requests.map((request, i) => wantedIdOf(request.input, definitions[i]!.data, reports[i]!, work[i]!));
  const refusal = deduplicationRefusal(principal);
  requests.forEach((request, i) => {
    if (refusal && request.input.deduplicate_token) reports[i]!(["deduplicate_token"], refusal);
    if (!isBrowserKey(principal)) return;
    if (request.input.id !== undefined) reports[i]!(["id"], CHOSEN_ID_REFUSAL);
    for (const member of browserRefusedExpressions(request.input)) reports[i]!([member], EXPRESSION_REFUSAL);
  });
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
  if (inserted.length > 0 || from) {
    const d1 = context.db.$client;
    const mark = context.takeCommitMark();
    const encrypted = requests.map((request) => request.encrypted === true);
    const committed = mark && (await mark.statement(d1, committedCreate(outcomes, sealed, deduplicating, encrypted, now)));
    let written: number;
    try {
      written = await insertTokens(d1, context.writeFence(now), inserted, chosenIds, now, {
        first: from?.consuming(d1, now),
        last: committed ? [committed] : [],
      });
    } catch (error) {
      if (isTakenIdError(error)) throw new ConflictError("A chosen token id was taken by another request meanwhile; nothing was created");
      throw mark?.refusalOf(error) ?? error;
    }
    if (written < inserted.length) await answerLostRaces(context.db, principal, outcomes, now);
  }

  return presentCreated(
    principal,
    keys,
    outcomes.map(({ row, data, inserted }, i) => ({
      row,
      data,
      created: inserted !== undefined,
      sentData: from === undefined && !requests[i]!.encrypted,
    })),
  );
}

/** Where cards are kept: a JWE's card number may not be stored where a caller that may not see cards reads it. */
const CARDS_TREE = "/pci/";

/**
 * The requests with each JWE's data decrypted (src/client-keys/), then checked against the type's rules
 * as plain data is; all or nothing, a refusal under the request's `data`. A JWE that holds another is
 * refused: its plaintext would be stored unchecked. One that holds a card number is refused outside
 * the cards' containers, whatever type it is sent as: the type is the caller's word, not the client's.
 */
async function openEncryptedData(context: TenantContext, requests: CreateRequest[]): Promise<CreateRequest[]> {
  if (!requests.some((request) => isEncryptedData(request.input.data))) return requests;
  const open = encryptedDataOpener(context);
  const errors: FieldErrors = {};
  const opened = await Promise.all(
    requests.map(async (request): Promise<CreateRequest> => {
      if (!isEncryptedData(request.input.data)) return request;
      const report = fieldErrorCollector(errors, request.path);
      const result = await open(request.input.data);
      if ("refusal" in result) report(["data"], result.refusal);
      else if (isEncryptedData(result.data)) report(["data"], "is a JWE whose plaintext is another JWE");
      else {
        for (const { path, message } of dataRefusals(request.input.type, result.data)) report(path, message);
        if (
          holdsCardNumber(result.data) &&
          !definitionOf(request.input).containers.every((container) => container.startsWith(CARDS_TREE))
        ) {
          report(["data"], `is a JWE whose plaintext holds a card number: it is kept only in containers under ${CARDS_TREE}`);
        }
      }
      return { ...request, input: { ...request.input, data: "data" in result ? result.data : undefined }, encrypted: true };
    }),
  );
  if (Object.keys(errors).length > 0) {
    throw ValidationError.summarised(requests[0]!.path ? "Nothing was tokenized" : "The token was not created", errors);
  }
  return opened;
}

/** Each token of a create's answer, as the caller sees it; `sentData` false when the caller did not send the data in plain. */
function presentCreated(
  principal: Principal,
  keys: TenantKeys,
  answered: { row: TokenRow; created: boolean; sentData: boolean; data?: () => unknown }[],
): Promise<Created[]> {
  return Promise.all(
    answered.map(async ({ row, created, sentData, data }) => {
      const transform = createdTransform(principal, row, created && sentData);
      const token = await present(principal, row, transform, data ?? (() => decryptData(keys, row)));
      return { token: { ...token, _extras: { deduplicated: !created } }, row };
    }),
  );
}

function committedCreate(
  outcomes: Outcome[],
  sealed: SealedToken[],
  deduplicating: boolean[],
  encrypted: boolean[],
  now: number,
): CommittedCreate {
  return {
    createdAt: now,
    tokens: outcomes.map((outcome, i) => ({
      id: outcome.row.id,
      inserted: outcome.inserted !== undefined,
      ...(encrypted[i] ? { encrypted: true as const } : {}),
      ...(deduplicating[i]
        ? {
            identity: {
              row: { type: sealed[i]!.row.type, fingerprint: sealed[i]!.row.fingerprint },
              fingerprints: sealed[i]!.fingerprints,
            },
          }
        : {}),
    })),
  };
}

/**
 * The tokens a committed create got, as a fresh create's answer would show them now: its new tokens,
 * or for a deduplicating request whose new token lost a race, the duplicate that won. A token deleted
 * or expired since cannot be answered.
 */
async function committedTokens(
  context: TenantContext,
  principal: Principal,
  committed: CommittedCreate,
  sentData = true,
): Promise<Created[]> {
  const now = Date.now();
  const rows = new Map(
    (await storage.liveTokens(context.db, context.tenantId, [...new Set(committed.tokens.map(({ id }) => id))], now)).map((row) => [
      row.id,
      row,
    ]),
  );
  const answered = await Promise.all(
    committed.tokens.map(async ({ id, inserted, identity, encrypted }) => {
      const row = rows.get(id);
      const sentPlainData = sentData && !encrypted;
      // A chosen id may have been taken again since by another token.
      if (row && (!inserted || (row.createdAt === committed.createdAt && row.createdBy === principal.applicationId))) {
        return { row, created: inserted, sentData: sentPlainData };
      }
      const duplicate = identity && (await duplicateOfCreate(context.db, principal, identity, now));
      if (!duplicate) {
        throw ConflictError.processed("its answer is not replayed: a token it created or answered no longer exists");
      }
      return { row: duplicate, created: false, sentData: sentPlainData };
    }),
  );
  return presentCreated(principal, await context.keys(), answered);
}

/**
 * How a create answers a token: a new one of data the caller sent under its token:create rule, a
 * public key's under redact; an existing one that deduplication answered also under its token:read rule, whichever is
 * stricter (none is redact), since only its fingerprint matched what the caller sent: its other
 * members (a card's cvc and expiry) the caller never supplied. So is a new one of data the caller did
 * not send (a converted token intent's): creating it is no read of it.
 */
function createdTransform(principal: Principal, row: TokenRow, createdFromCallersData: boolean): Transform {
  // A public key's answer goes to the merchant's page, whose script chose the request's shape: a mask that shows a
  // member whole (a bank's routing number) would hand it what the shopper typed. It gets the token without data.
  if (principal.applicationType === "public") return "redact";
  const containers = containersOf(row);
  const create = accessTo(principal, "token:create", containers) ?? "redact";
  return createdFromCallersData ? create : stricter(create, accessTo(principal, "token:read", containers) ?? "redact");
}

/** Where a request sits in a tokenize payload, for messages; nothing for POST /tokens. */
function whereIs(path?: JsonPath): string {
  return path ? ` (at ${jsonPath(path)})` : "";
}
