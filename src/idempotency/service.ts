/**
 * `{P}-IDEMPOTENCY-KEY` on a creating request: the same key with the same request within 24 hours
 * returns the first response (status and body); with another request, or while the first is still
 * running, 409. Responses are stored encrypted, since they may hold a new key or token data. A 5xx
 * is not remembered, so the client can retry it.
 */
import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { ConflictError } from "../http/problem";
import { IDEMPOTENCY_WINDOW_MS } from "../limits";
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
  return { status: record.status, body: await keys.decrypt(record.response, sealingContext(key)) };
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
  await storage.saveResponse(context.db, scope, status, await keys.encrypt(body, sealingContext(key)));
}

/** Called by the scheduled handler: records older than the window are useless. */
export async function purgeIdempotencyRecords(context: RequestContext, now = Date.now()): Promise<void> {
  for (const db of context.dataDatabases()) await storage.purgeRecordsBefore(db, now - IDEMPOTENCY_WINDOW_MS);
}
