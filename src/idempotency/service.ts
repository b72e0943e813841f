/**
 * `{P}-IDEMPOTENCY-KEY` on a creating request: the same key with the same request within 24 hours
 * returns the first response (status and body); with another request, or while the first is still
 * running, 409. Responses are stored encrypted, since they may hold a new key or token data. A 5xx
 * is not remembered, so the client can retry it. A card's cvc leaves a stored response when it
 * leaves the card (src/tokens/cvc.ts): replays omit it from its deadline on, and the cron rewrites
 * the response without it.
 */
import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { ConflictError } from "../errors";
import { IDEMPOTENCY_WINDOW_MS } from "../limits";
import { CVC_PURGE_CHUNK, cvcDeadlineInReply, keysUnlessShredded, replyWithoutCvcs } from "../tokens/cvc";
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
  if (record.status === null || record.response === null) {
    throw new ConflictError("A request with this idempotency key is still being processed");
  }
  const keys = await context.keys();
  const body = await keys.decrypt(record.response, sealingContext(key));
  // The cron may not have rewritten it yet.
  const cvcsExpired = record.cvcExpiresAt !== null && record.cvcExpiresAt <= now;
  return { status: record.status, body: cvcsExpired ? replyWithoutCvcs(body) : body };
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
  const cvcExpiresAt = cvcDeadlineInReply(body, Date.now(), context.config);
  await storage.saveResponse(context.db, scope, status, await keys.encrypt(body, sealingContext(key)), cvcExpiresAt);
}

/** Called by the scheduled handler: records older than the window are useless. */
export async function purgeIdempotencyRecords(context: RequestContext, now = Date.now()): Promise<void> {
  for (const db of context.dataDatabases()) await storage.purgeRecordsBefore(db, now - IDEMPOTENCY_WINDOW_MS);
}

/**
 * Called by the scheduled handler, as purgeExpiredCvcs is for tokens: re-encrypts every stored
 * response whose cvc deadline has passed without its cvcs, in bounded chunks. A response replaced
 * meanwhile (a key rotation re-sealed it) is read again.
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
        const body = replyWithoutCvcs(await keys.decrypt(record.response, sealingContext(record.key)));
        purged += await storage.replaceResponseWithoutCvcs(db, record, await keys.encrypt(body, sealingContext(record.key)));
      }
      if (due.length < CVC_PURGE_CHUNK) break;
    }
  }
  return purged;
}
