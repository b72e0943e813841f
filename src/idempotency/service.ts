/**
 * `{P}-IDEMPOTENCY-KEY` on a creating request: the same key with the same request within 24 hours
 * returns the first response (status and body); with another request, or while the first is still
 * running, 409. Responses are stored encrypted, since they may hold a new key or token data. A 5xx
 * is not remembered, so the client can retry it. A card's cvc leaves a stored response when it
 * leaves the card (src/tokens/cvc.ts): replays omit it from its deadline on, and the cron rewrites
 * the response without it.
 *
 * A replay never runs the request again, and never shows what a fresh request would not: when the
 * request detokenized tokens, each must still exist and its token:use rule still show as much, or
 * the answer is withheld with a 409 saying the request was processed. An answer that may hold a
 * detokenized cvc in any shape (a reactor's result) cannot be rewritten: it is withdrawn instead.
 */
import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { ConflictError, type ShownToken } from "../errors";
import { IDEMPOTENCY_WINDOW_MS } from "../limits";
import { CVC_PURGE_CHUNK, cvcDeadlineInReply, keysUnlessShredded, replyWithoutCvcs } from "../tokens/cvc";
import { shownLessNow } from "../tokens/use";
import * as storage from "./storage";

/** A response given before under the same key. */
export interface Replay {
  status: number;
  body: string;
}

const scopeOf = (principal: Principal, key: string): storage.IdempotencyScope => ({
  tenantId: principal.tenantId,
  applicationId: principal.applicationId,
  key,
});
export const sealingContext = (key: string) => `idempotency/${key}`;
// Not under `idempotency/`: no idempotency key can make the two contexts one.
export const detokenizedContext = (key: string) => `idempotency-detokenized/${key}`;

/** What a stored request detokenized for its caller (sealed: an alias id can be derived from data). */
interface Detokenized {
  /** How it showed each token, by id. */
  tokens: Record<string, ShownToken["transform"]>;
  /** What it showed held a card's cvc, which the answer may hold in any shape. */
  cvc: boolean;
}

const CVC_WITHDRAWN = "it held a card's cvc, whose retention period has passed";

/** Claims the key for this request, or answers the response the first request with it got. */
export async function claimIdempotencyKey(
  context: TenantContext,
  principal: Principal,
  key: string,
  requestHash: string,
): Promise<Replay | null> {
  context.requireWritable();
  const scope = scopeOf(principal, key);
  const now = Date.now();
  if (await storage.claimKey(context.db, scope, requestHash, now, now - IDEMPOTENCY_WINDOW_MS)) return null;
  const record = await storage.findRecord(context.db, scope);
  if (!record || record.requestHash !== requestHash) {
    throw new ConflictError("This idempotency key was already used with a different request");
  }
  if (record.status === null) throw new ConflictError("A request with this idempotency key is still being processed");
  if (record.response === null) throw notReplayed(record.status, CVC_WITHDRAWN);
  const keys = await context.keys();
  // The cron may not have rewritten it yet. A shorter retention in force applies to stored answers at once.
  const cvcsExpired =
    record.cvcExpiresAt !== null && (record.cvcExpiresAt <= now || record.createdAt + context.config.CARD_CVC_RETENTION_S * 1000 <= now);
  if (record.detokenized !== null) {
    const detokenized = await openDetokenized(keys, record.detokenized, key);
    if (cvcsExpired && detokenized.cvc) throw notReplayed(record.status, CVC_WITHDRAWN);
    const shownLess = await shownLessNow(context, principal, detokenized.tokens);
    if (shownLess !== null) throw notReplayed(record.status, shownLess);
  }
  const body = await keys.decrypt(record.response, sealingContext(key));
  return { status: record.status, body: cvcsExpired ? replyWithoutCvcs(body) : body };
}

/** The request was processed, but its answer may not be shown now: the caller learns that, and why, not the answer. */
function notReplayed(status: number, reason: string): ConflictError {
  return new ConflictError(
    `The request with this idempotency key was processed (it answered ${status}), but its answer is not replayed: ${reason}`,
  );
}

async function openDetokenized(keys: TenantKeys, sealed: string, key: string): Promise<Detokenized> {
  return JSON.parse(await keys.decrypt(sealed, detokenizedContext(key))) as Detokenized;
}

/** Keeps the response for replays; a 5xx releases the key instead, so the client can retry. */
export async function rememberResponse(
  context: TenantContext,
  principal: Principal,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  const scope = scopeOf(principal, key);
  if (status >= 500) return storage.releaseKey(context.db, scope);
  const keys = await context.keys();
  const shown = [...context.revealed.tokens];
  const detokenized: Detokenized | null =
    shown.length === 0
      ? null
      : {
          tokens: Object.fromEntries(shown.map(([id, token]) => [id, token.transform])),
          cvc: shown.some(([, token]) => token.cvcExpiresAt !== null),
        };
  // A detokenized cvc may be anywhere in the answer, and must be gone from it when it is gone from its card.
  const deadlines = [cvcDeadlineInReply(body, Date.now(), context.config), ...shown.map(([, token]) => token.cvcExpiresAt)].filter(
    (deadline) => deadline !== null,
  );
  await storage.saveResponse(context.db, scope, {
    status,
    sealedBody: await keys.encrypt(body, sealingContext(key)),
    cvcExpiresAt: deadlines.length === 0 ? null : Math.min(...deadlines),
    sealedDetokenized: detokenized && (await keys.encrypt(JSON.stringify(detokenized), detokenizedContext(key))),
  });
}

/** Called by the scheduled handler: records older than the window are useless. */
export async function purgeIdempotencyRecords(context: RequestContext, now = Date.now()): Promise<void> {
  for (const db of context.dataDatabases()) await storage.purgeRecordsBefore(db, now - IDEMPOTENCY_WINDOW_MS);
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
