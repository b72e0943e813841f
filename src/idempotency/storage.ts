import { and, eq, isNotNull, lt, lte } from "drizzle-orm";
import type { Database } from "../db/client";
import { idempotencyRecords } from "../db/data-tables";

/** One application's use of one idempotency key. */
export interface IdempotencyScope {
  tenantId: string;
  applicationId: string;
  key: string;
}

export type IdempotencyRecord = typeof idempotencyRecords.$inferSelect;

const recordOf = (scope: IdempotencyScope) =>
  and(
    eq(idempotencyRecords.tenantId, scope.tenantId),
    eq(idempotencyRecords.applicationId, scope.applicationId),
    eq(idempotencyRecords.key, scope.key),
  );

/** Claims the key for a request, dropping its record once older than `expiredBefore`: false when another request holds it. */
export async function claimKey(
  db: Database,
  scope: IdempotencyScope,
  requestHash: string,
  now: number,
  expiredBefore: number,
): Promise<boolean> {
  await db.delete(idempotencyRecords).where(and(recordOf(scope), lt(idempotencyRecords.createdAt, expiredBefore)));
  const claimed = await db
    .insert(idempotencyRecords)
    .values({ ...scope, requestHash, createdAt: now })
    .onConflictDoNothing()
    .returning({ key: idempotencyRecords.key });
  return claimed.length > 0;
}

export async function findRecord(db: Database, scope: IdempotencyScope): Promise<IdempotencyRecord | undefined> {
  const [record] = await db.select().from(idempotencyRecords).where(recordOf(scope)).limit(1);
  return record;
}

export async function saveResponse(
  db: Database,
  scope: IdempotencyScope,
  saved: { status: number; sealedBody: string; cvcExpiresAt: number | null; sealedDetokenized: string | null },
): Promise<void> {
  await db
    .update(idempotencyRecords)
    .set({ status: saved.status, response: saved.sealedBody, cvcExpiresAt: saved.cvcExpiresAt, detokenized: saved.sealedDetokenized })
    .where(recordOf(scope));
}

export async function releaseKey(db: Database, scope: IdempotencyScope): Promise<void> {
  await db.delete(idempotencyRecords).where(recordOf(scope));
}

/** A stored response, sealed, with the record it belongs to and the tokens its request detokenized. */
export interface SealedResponse extends IdempotencyScope {
  response: string;
  detokenized: string | null;
}

/** Responses whose cvcs must be gone by `now`, earliest deadline first. */
export async function responsesWithCvcDue(db: Database, now: number, limit: number): Promise<SealedResponse[]> {
  const due = await db
    .select({
      tenantId: idempotencyRecords.tenantId,
      applicationId: idempotencyRecords.applicationId,
      key: idempotencyRecords.key,
      response: idempotencyRecords.response,
      detokenized: idempotencyRecords.detokenized,
    })
    .from(idempotencyRecords)
    .where(lte(idempotencyRecords.cvcExpiresAt, now))
    .orderBy(idempotencyRecords.cvcExpiresAt, idempotencyRecords.tenantId, idempotencyRecords.applicationId, idempotencyRecords.key)
    .limit(limit);
  // A deadline is only ever saved with the response it was computed from.
  return due.map((record) => ({ ...record, response: record.response! }));
}

/** Writes the response without its cvcs (null: withdrawn), unless it changed since it was read; 1 or 0. */
export async function replaceResponseWithoutCvcs(db: Database, read: SealedResponse, sealedBody: string | null): Promise<number> {
  const replaced = await db
    .update(idempotencyRecords)
    .set({ response: sealedBody, cvcExpiresAt: null })
    .where(and(recordOf(read), eq(idempotencyRecords.response, read.response)))
    .returning({ key: idempotencyRecords.key });
  return replaced.length;
}

export async function purgeRecordsBefore(db: Database, expiredBefore: number): Promise<void> {
  await db.delete(idempotencyRecords).where(lt(idempotencyRecords.createdAt, expiredBefore));
}

/** Clears the cvc deadlines of a crypto-shredded tenant's replies: nobody can read them any more. */
export async function forgetReplyCvcDeadlines(db: Database, tenantId: string): Promise<void> {
  await db
    .update(idempotencyRecords)
    .set({ cvcExpiresAt: null })
    .where(and(eq(idempotencyRecords.tenantId, tenantId), isNotNull(idempotencyRecords.cvcExpiresAt)));
}
