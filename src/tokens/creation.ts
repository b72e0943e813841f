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
import type { TenantContext } from "../context";
import { addFieldError, ConflictError, type FieldErrors, ValidationError } from "../errors";
import { validationErrorOf } from "../http/validation";
import { cvcDeadlineOf } from "./cvc";
import { answerLostRaces, deduplicate, deduplicationRefusal } from "./deduplication";
import { definitionOf, evaluate, fieldErrorCollector } from "./definition";
import { WorkBudget } from "./expressions";
import { claimTokenIds, wantedIdOf } from "./id-assignment";
import { containersOf, present, tokenEventData } from "./presentation";
import { type CreatedTokenResponse, type CreateToken, CreateTokenBody } from "./schema";
import { decryptData, sealToken } from "./sealing";
import type { TokenRow } from "./storage";
import { insertTokens, isTakenIdError } from "./storage-writes";
import { findTokenRequests, type JsonPath, jsonPath, substituteTokens } from "./tokenize";

interface CreateRequest {
  input: CreateToken;
  /** Where the request sits in a tokenize payload; absent for POST /tokens. */
  path?: JsonPath;
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

export async function createToken(context: TenantContext, principal: Principal, input: CreateToken): Promise<CreatedTokenResponse> {
  const [created] = await createTokens(context, principal, [{ input }]);
  context.audit.describe(createdTokenEntry(created!));
  return created!.token;
}

/** A token one call created or deduplication answered: as the caller sees it, and its row, which its event describes. */
interface Created {
  token: CreatedTokenResponse;
  row: TokenRow;
}

/** The audit of one token a call created: the event, or a note that an existing token was returned. */
function createdTokenEntry({ token, row }: Created) {
  return token.deduplicated
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
  const created = await createTokens(context, principal, requests);
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
async function createTokens(context: TenantContext, principal: Principal, requests: CreateRequest[]): Promise<Created[]> {
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
  if (inserted.length > 0) {
    let written: number;
    try {
      written = await insertTokens(context.db.$client, inserted, chosenIds, now);
    } catch (error) {
      if (!isTakenIdError(error)) throw error;
      throw new ConflictError("A chosen token id was taken by another request meanwhile; nothing was created");
    }
    if (written < inserted.length) await answerLostRaces(context.db, principal, outcomes, now);
  }

  return Promise.all(
    outcomes.map(async ({ row, data, inserted }) => {
      const token = await present(
        principal,
        row,
        createdTransform(principal, row, inserted !== undefined),
        data ?? (() => decryptData(keys, row)),
      );
      return { token: { ...token, deduplicated: inserted === undefined }, row };
    }),
  );
}

/**
 * How a create answers a token: a new one under the caller's token:create rule (it supplied the
 * data), a public key's under redact; an existing one that deduplication answered also under its token:read rule, whichever is
 * stricter (none is redact), since only its fingerprint matched what the caller sent: its other
 * members (a card's cvc and expiry) the caller never supplied.
 */
function createdTransform(principal: Principal, row: TokenRow, created: boolean): Transform {
  // A public key's answer goes to the merchant's page, whose script chose the request's shape: a mask that shows a
  // member whole (a bank's routing number) would hand it what the shopper typed. It gets the token without data.
  if (principal.applicationType === "public") return "redact";
  const containers = containersOf(row);
  const create = accessTo(principal, "token:create", containers) ?? "redact";
  return created ? create : stricter(create, accessTo(principal, "token:read", containers) ?? "redact");
}

/** Where a request sits in a tokenize payload, for messages; nothing for POST /tokens. */
function whereIs(path?: JsonPath): string {
  return path ? ` (at ${jsonPath(path)})` : "";
}
