/**
 * `{P}-IDEMPOTENCY-KEY` on a creating request: the same key with the same request within 24 hours
 * returns the first response (status and body); with another request, 409. Responses are stored
 * encrypted, since they may hold a new key or token data. A 5xx is not remembered, so the client can
 * retry it. A card's cvc leaves a stored response when it leaves the card (src/tokens/cvc.ts): replays
 * omit it from its deadline on, and the cron rewrites the response without it.
 *
 * A claim of a key is a lease of IDEMPOTENCY_LEASE_MS (the configuration's, 60 s by default), not a
 * lock: a request killed while it holds one must not hold it for a day. Within the lease a retry is a
 * 409 that says when to come back. The write of POST /tokens and /tokenize carries the record's commit
 * mark in its own batch (CommitMark), so the record knows whether the write happened: with the mark
 * and no saved answer, a retry makes the answer again from it; without the mark past the lease,
 * nothing was written and a retry takes the claim over and runs the request. The routes that write
 * the control database (applications, proxies, webhooks, client keys, formulas, reactors), which no
 * batch of the data database reaches, carry a mark in its idempotency_marks instead
 * (ControlCommitMark), which the retry reads in the same way. A react, whose tenant code may have
 * called a partner, answers an unanswered claim past the lease with a 409 saying its outcome is
 * unknown.
 *
 * A replay never runs the request again, and never shows what a fresh request would not: when the
 * request detokenized tokens, each must still exist and its token:use rule still show as much, or
 * the answer is withheld with a 409 saying the request was processed. An answer that may hold a
 * detokenized cvc in any shape (a reactor's result) cannot be rewritten: it is withdrawn instead.
 */
import type { Principal } from "../auth/access";
import type { CommitMark, ControlCommitMark, RequestContext, TenantContext } from "../context";
import { sha256Hex } from "../crypto/secrets";
import type { TenantKeys } from "../crypto/tenant-keys";
import { shownLessNow } from "../detokenization/service";
import { ConflictError } from "../errors";
import { IDEMPOTENCY_WINDOW_MS } from "../limits";
import { CVC_PURGE_CHUNK, cvcDeadlineInReply, keysUnlessShredded, replyWithoutCvcs } from "../tokens/cvc";
import { type Detokenized, detokenizedOf, earliestCvcDeadline } from "../tokens/use";
import * as storage from "./storage";

/** A response given before under the same key. */
export interface Replay {
  status: number;
  body: string;
}

/** A request with an idempotency key, as it claims the key. */
export interface IdempotentRequest {
  key: string;
  /** Of method, path and body (requestHashOf): the same key with another request is a conflict. */
  requestHash: string;
  /** Method and path, named when the outcome of an attempt that stopped is unknown. */
  request: string;
  /** Its write carries the record's commit mark in its own batch (the `idempotentWrite` middleware). */
  commitsWithWrite: boolean;
  /** The mark is in the control database's idempotency_marks, the write being there (the `idempotentControlWrite` middleware). */
  marksInControl?: boolean;
  /** A committed write is answered again from its mark, as a fresh request would be now, even when its answer was saved. */
  answeredFromMark?: boolean;
}

/** The key, held by this request since `claimedAt`: its answer and its commit mark are kept only while it still is. */
export interface Claim {
  scope: storage.IdempotencyScope;
  claimedAt: number;
  /** When the key's record was made: a control mark older than it belongs to an earlier use of the key. */
  since: number;
  /** Its write's mark is in the control database's idempotency_marks, where the record cannot show it. */
  marksInControl: boolean;
  /** Another attempt of the request committed the write first, so its mark refused this one's batch (controlCommitMarkOf). */
  committedElsewhere?: boolean;
  /** This attempt's control batch committed, its mark with it (controlCommitMarkOf). */
  committedHere?: boolean;
}

/**
 * What a request with a key does: run, holding the claim; answer a response given before; or answer
 * again what an earlier attempt's committed write did (its `outcome`), whose answer was never saved.
 */
export type Claimed =
  | { claim: Claim }
  | { replay: Replay }
  | { committed: unknown; scope: storage.IdempotencyScope; markedElsewhere: boolean };

const scopeOf = (principal: Principal, key: string): storage.IdempotencyScope => ({
  tenantId: principal.tenantId,
  applicationId: principal.applicationId,
  key,
});
export const sealingContext = (key: string) => `idempotency/${key}`;
// Not under `idempotency/`: no idempotency key can make two of these contexts one.
export const detokenizedContext = (key: string) => `idempotency-detokenized/${key}`;
export const outcomeContext = (key: string) => `idempotency-outcome/${key}`;

const CVC_WITHDRAWN = "it held a card's cvc, whose retention period has passed";

/** The request as its idempotency key binds it: the same key with another hash is another request. */
export function requestHashOf(method: string, path: string, body: string): Promise<string> {
  return sha256Hex(`${method} ${path} ${body}`);
}

/**
 * Claims the key for this request at `now`, takes over a claim whose request stopped, or answers
 * what the first request with the key answered or committed.
 */
export async function claimIdempotencyKey(
  context: TenantContext,
  principal: Principal,
  request: IdempotentRequest,
  now = Date.now(),
): Promise<Claimed> {
  context.requireWritable();
  const scope = scopeOf(principal, request.key);
  const { requestHash, commitsWithWrite } = request;
  if (await storage.claimKey(context.db, scope, { requestHash, commitsWithWrite }, now, now - IDEMPOTENCY_WINDOW_MS)) {
    return { claim: { scope, claimedAt: now, since: now, marksInControl: request.marksInControl === true } };
  }
  const record = await storage.findRecord(context.db, scope);
  if (!record || record.requestHash !== requestHash) {
    throw new ConflictError("This idempotency key was already used with a different request");
  }
  if (record.status !== null && !(request.answeredFromMark && record.outcome !== null)) {
    return { replay: await replayOf(context, principal, record, now) };
  }
  // The commit mark: in the record for a data write, in idempotency_marks for a control write.
  const markedElsewhere = record.outcome === null && request.marksInControl === true;
  const mark = markedElsewhere ? await storage.findMark(context.control, scope, record.createdAt) : record.outcome;
  if (mark !== null) {
    const keys = await context.keys();
    return { committed: JSON.parse(await keys.decrypt(mark, outcomeContext(request.key))), scope, markedElsewhere };
  }
  const lease = context.config.IDEMPOTENCY_LEASE_MS;
  const leaseEnd = record.claimedAt + lease;
  if (now < leaseEnd) throw stillProcessing(leaseEnd - now);
  if (!record.commitsWithWrite) throw outcomeUnknown(request.request);
  // Its write carries the commit mark, which is absent: it wrote nothing, and may run again.
  if (await storage.takeOverClaim(context.db, scope, record.claimedAt, now)) {
    return { claim: { scope, claimedAt: now, since: record.createdAt, marksInControl: request.marksInControl === true } };
  }
  throw stillProcessing(lease);
}

/** The first response, as a fresh request would be answered now. */
async function replayOf(context: TenantContext, principal: Principal, record: storage.IdempotencyRecord, now: number): Promise<Replay> {
  const status = record.status!;
  if (record.response === null) throw notReplayed(status, CVC_WITHDRAWN);
  const keys = await context.keys();
  // The cron may not have rewritten it yet. A shorter retention in force applies to stored answers at once.
  const cvcsExpired =
    record.cvcExpiresAt !== null && (record.cvcExpiresAt <= now || record.createdAt + context.config.CARD_CVC_RETENTION_S * 1000 <= now);
  if (record.detokenized !== null) {
    const detokenized = await openDetokenized(keys, record.detokenized, record.key);
    if (cvcsExpired && detokenized.cvc) throw notReplayed(status, CVC_WITHDRAWN);
    const shownLess = await shownLessNow(context, principal, detokenized.tokens);
    if (shownLess !== null) throw notReplayed(status, shownLess);
  }
  const body = await keys.decrypt(record.response, sealingContext(record.key));
  return { status, body: cvcsExpired ? replyWithoutCvcs(body) : body };
}

/** The request was processed, but its answer may not be shown now: the caller learns that, and why, not the answer. */
function notReplayed(status: number, reason: string): ConflictError {
  return new ConflictError(
    `The request with this idempotency key was processed (it answered ${status}), but its answer is not replayed: ${reason}`,
  );
}

function stillProcessing(leaseLeftMs: number): ConflictError {
  const seconds = Math.ceil(leaseLeftMs / 1000);
  return new ConflictError(`A request with this idempotency key is still being processed; retry in ${seconds} s`, {
    "Retry-After": String(seconds),
  });
}

/** A claim that ran out without an answer, on a route whose writes carry no commit mark: running it again could do it twice. */
function outcomeUnknown(request: string): ConflictError {
  return new ConflictError(
    `The first request with this idempotency key (${request}) stopped before answering, and its outcome is unknown: it is ` +
      "not run again. Look for what it would have created or changed, and send it again under a new key if it is missing",
  );
}

const ANOTHER_ATTEMPT_COMMITTED =
  "Another attempt of the request with this idempotency key committed its write first, so this one wrote nothing: " +
  "send the request again with the key for that attempt's answer";

const CLAIM_TAKEN_OVER =
  "This request held its idempotency key past its lease and a retry took the key over: nothing was written, the retry's answer is kept";

/** The mark the request's write carries in its batch while `claim` holds the key (src/context.ts). */
export function commitMarkOf(context: TenantContext, claim: Claim): CommitMark {
  return {
    async statement(d1, outcome) {
      const keys = await context.keys();
      const sealed = await keys.encrypt(JSON.stringify(outcome), outcomeContext(claim.scope.key));
      return storage.commitStatement(d1, claim.scope, claim.claimedAt, sealed);
    },
    refusalOf: (error) => (storage.isLostClaimError(error) ? new ConflictError(CLAIM_TAKEN_OVER) : null),
  };
}

/**
 * The mark the request's control write carries in its batch. It holds the key whoever claimed it
 * last: of two attempts of one request (the one that outlived its lease, and the retry that took the
 * claim over) the first batch to commit writes, and the other fails on the mark.
 */
export function controlCommitMarkOf(context: TenantContext, claim: Claim): ControlCommitMark {
  return {
    async queryFor(outcome) {
      const keys = await context.keys();
      const sealed = await keys.encrypt(JSON.stringify(outcome), outcomeContext(claim.scope.key));
      return (control) => storage.markQuery(control, claim.scope, claim, sealed);
    },
    refusalOf(error) {
      if (!storage.isMarkTakenError(error)) return null;
      claim.committedElsewhere = true;
      return new ConflictError(ANOTHER_ATTEMPT_COMMITTED);
    },
    committed() {
      claim.committedHere = true;
    },
  };
}

async function openDetokenized(keys: TenantKeys, sealed: string, key: string): Promise<Detokenized> {
  return JSON.parse(await keys.decrypt(sealed, detokenizedContext(key))) as Detokenized;
}

/**
 * Keeps the response for replays while the claim still holds the key; a 5xx releases the key instead,
 * so the client can retry, unless the request's write was committed (the retry answers what it wrote).
 * An attempt whose control write lost to another attempt's keeps nothing: the next retry answers that
 * write from its mark, which a saved 409 would hide for the rest of the window. Nor does a refusal
 * (4xx) of an attempt that committed no mark while the request's mark is there: another attempt of
 * it committed, before this one's checks (a limit it then found reached) or its write.
 */
export async function rememberResponse(context: TenantContext, claim: Claim, status: number, body: string): Promise<void> {
  if (claim.committedElsewhere) return;
  // A control mark is in the other database, where releaseKey and saveResponse cannot see it: it is looked for here.
  const markThere = async () => claim.marksInControl && (await storage.findMark(context.control, claim.scope, claim.since)) !== null;
  if (status >= 500) {
    if (await markThere()) return;
    return storage.releaseKey(context.db, claim.scope, claim.claimedAt);
  }
  if (status >= 400 && !claim.committedHere && (await markThere())) return;
  await storage.saveResponse(context.db, claim.scope, claim.claimedAt, await sealedResponse(context, claim.scope.key, status, body));
}

/** Keeps an answer made again from a commit mark, unless an answer was saved meanwhile. */
export async function rememberCommittedResponse(
  context: TenantContext,
  scope: storage.IdempotencyScope,
  status: number,
  body: string,
  markedElsewhere: boolean,
): Promise<void> {
  await storage.saveResponse(context.db, scope, null, await sealedResponse(context, scope.key, status, body), markedElsewhere);
}

async function sealedResponse(context: TenantContext, key: string, status: number, body: string) {
  const keys = await context.keys();
  const detokenized = detokenizedOf(context.revealed);
  // A detokenized cvc may be anywhere in the answer, and must be gone from it when it is gone from its card.
  const deadlines = [cvcDeadlineInReply(body, Date.now(), context.config), earliestCvcDeadline(context.revealed)].filter(
    (deadline) => deadline !== null,
  );
  return {
    status,
    sealedBody: await keys.encrypt(body, sealingContext(key)),
    cvcExpiresAt: deadlines.length === 0 ? null : Math.min(...deadlines),
    sealedDetokenized: detokenized && (await keys.encrypt(JSON.stringify(detokenized), detokenizedContext(key))),
  };
}

/** Called by the scheduled handler: records older than the window are useless. */
export async function purgeIdempotencyRecords(context: RequestContext, now = Date.now()): Promise<void> {
  for (const db of context.dataDatabases()) await storage.purgeRecordsBefore(db, now - IDEMPOTENCY_WINDOW_MS);
  await storage.purgeMarksBefore(context.control, now - IDEMPOTENCY_WINDOW_MS);
}

/**
 * Called by the scheduled handler, as purgeExpiredCvcs is for tokens: re-encrypts every stored
 * response whose cvc deadline has passed without its cvcs, in bounded chunks, or withdraws it when
 * its request detokenized a cvc. A response replaced meanwhile (a key rotation re-sealed it) is read again.
 */
export async function purgeExpiredReplyCvcs(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) {
    for (;;) {
      const due = await storage.responsesWithCvcDue(db, now, CVC_PURGE_CHUNK);
      for (const record of due) {
        const keys = await keysUnlessShredded(context, record.tenantId);
        if (keys === null) {
          await storage.forgetReplyCvcDeadlines(db, record.tenantId);
          continue;
        }
        const withdrawn = record.detokenized !== null && (await openDetokenized(keys, record.detokenized, record.key)).cvc;
        const sealed = withdrawn
          ? null
          : await keys.encrypt(
              replyWithoutCvcs(await keys.decrypt(record.response, sealingContext(record.key))),
              sealingContext(record.key),
            );
        purged += await storage.replaceResponseWithoutCvcs(db, record, sealed);
      }
      if (due.length < CVC_PURGE_CHUNK) break;
    }
  }
  return purged;
}
