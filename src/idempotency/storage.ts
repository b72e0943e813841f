import { and, eq, gte, isNotNull, isNull, lt, lte, sql } from "drizzle-orm";
import { type Database, failedOn } from "../db/client";
import { idempotencyMarks } from "../db/control-tables";
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

/** The record while the claim made at `claimedAt` holds it with nothing answered or committed yet. */
const openClaimOf = (scope: IdempotencyScope, claimedAt: number) =>
  and(recordOf(scope), eq(idempotencyRecords.claimedAt, claimedAt), isNull(idempotencyRecords.status), isNull(idempotencyRecords.outcome));

/**
 * Claims the key for a request at `now`, dropping its record once older than `expiredBefore`: false
 * when a record holds it.
 */
export async function claimKey(
  db: Database,
  scope: IdempotencyScope,
  claim: { requestHash: string; commitsWithWrite: boolean },
  now: number,
  expiredBefore: number,
): Promise<boolean> {
  await db.delete(idempotencyRecords).where(and(recordOf(scope), lt(idempotencyRecords.createdAt, expiredBefore)));
  const claimed = await db
    .insert(idempotencyRecords)
    .values({ ...scope, ...claim, createdAt: now, claimedAt: now })
    .onConflictDoNothing()
    .returning({ key: idempotencyRecords.key });
  return claimed.length > 0;
}

/**
 * Takes over a claim whose lease ran out, read as claimed at `claimedAt`, for a request at `now`: of
 * the retries that race for it, one wins. False when it was answered, committed or claimed again meanwhile.
 */
export async function takeOverClaim(db: Database, scope: IdempotencyScope, claimedAt: number, now: number): Promise<boolean> {
  const taken = await db
    .update(idempotencyRecords)
    .set({ claimedAt: now })
    .where(openClaimOf(scope, claimedAt))
    .returning({ key: idempotencyRecords.key });
  return taken.length > 0;
}

export async function findRecord(db: Database, scope: IdempotencyScope): Promise<IdempotencyRecord | undefined> {
  const [record] = await db.select().from(idempotencyRecords).where(recordOf(scope)).limit(1);
  return record;
}

/**
 * The commit mark, for the batch of the write it answers: seals the outcome into the record while the
 * claim made at `claimedAt` still holds it, unanswered and uncommitted. Otherwise (taken over, answered,
 * or gone) the row it would upsert has no request_hash, so NOT NULL fails the statement and with it
 * the whole batch: SQLite has no other way for a statement outside a trigger to abort a batch.
 */
export function commitStatement(d1: D1Database, scope: IdempotencyScope, claimedAt: number, sealedOutcome: string): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO idempotency_records (tenant_id, application_id, key, request_hash, created_at, outcome)
       VALUES (?1, ?2, ?3, (
         SELECT request_hash FROM idempotency_records
         WHERE tenant_id = ?1 AND application_id = ?2 AND key = ?3 AND claimed_at = ?4 AND status IS NULL AND outcome IS NULL
       ), ?4, ?5)
       ON CONFLICT (tenant_id, application_id, key) DO UPDATE SET outcome = excluded.outcome`,
    )
    .bind(scope.tenantId, scope.applicationId, scope.key, claimedAt, sealedOutcome);
}

/** The failure of a commitStatement whose claim no longer held. */
export function isLostClaimError(error: unknown): boolean {
  return error instanceof Error && /NOT NULL constraint failed: idempotency_records\.request_hash/.test(error.message);
}

/** The control database's mark of the scope's key made at or after `since`: of this use of the key. */
const markOf = (scope: IdempotencyScope, since: number) =>
  and(
    eq(idempotencyMarks.tenantId, scope.tenantId),
    eq(idempotencyMarks.applicationId, scope.applicationId),
    eq(idempotencyMarks.key, scope.key),
    gte(idempotencyMarks.createdAt, since),
  );

/**
 * The control database's commit mark (idempotency_marks), for the batch of the write it answers:
 * records the outcome unless a mark of this use of the key (made at or after `since`, its record's
 * creation) is there, which another attempt of the request committed. Then the value is NULL, so NOT
 * NULL fails the statement and with it the whole batch, as commitStatement does; a mark of an earlier
 * use of the key is replaced.
 */
export function markQuery(db: Database, scope: IdempotencyScope, claim: { claimedAt: number; since: number }, sealedOutcome: string) {
  return db
    .insert(idempotencyMarks)
    .values({
      ...scope,
      outcome: sql`(SELECT ${sealedOutcome} WHERE NOT EXISTS (SELECT 1 FROM ${idempotencyMarks} WHERE ${markOf(scope, claim.since)}))`,
      createdAt: claim.claimedAt,
    })
    .onConflictDoUpdate({
      target: [idempotencyMarks.tenantId, idempotencyMarks.applicationId, idempotencyMarks.key],
      set: { outcome: sql`excluded.outcome`, createdAt: sql`excluded.created_at` },
    });
}

/** The failure of a markQuery batch: another attempt of the request committed first. */
export function isMarkTakenError(error: unknown): boolean {
  return failedOn(error, /NOT NULL constraint failed: idempotency_marks\.outcome/);
}

/** The control database's commit mark of this use of the key (made at or after `since`), sealed. */
export async function findMark(db: Database, scope: IdempotencyScope, since: number): Promise<string | null> {
  const [mark] = await db.select({ outcome: idempotencyMarks.outcome }).from(idempotencyMarks).where(markOf(scope, since)).limit(1);
  return mark?.outcome ?? null;
}

export async function purgeMarksBefore(db: Database, expiredBefore: number): Promise<void> {
  await db.delete(idempotencyMarks).where(lt(idempotencyMarks.createdAt, expiredBefore));
}

/**
 * Saves the answer, the first one only: by the request that holds the claim made at `claimedAt`, or,
 * with `claimedAt` null, by a retry that made the answer again from the commit mark (in the record,
 * or with `markedElsewhere` in the control database's idempotency_marks).
 */
export async function saveResponse(
  db: Database,
  scope: IdempotencyScope,
  claimedAt: number | null,
  saved: { status: number; sealedBody: string; cvcExpiresAt: number | null; sealedDetokenized: string | null },
  markedElsewhere = false,
): Promise<void> {
  const holder =
    claimedAt !== null ? eq(idempotencyRecords.claimedAt, claimedAt) : markedElsewhere ? undefined : isNotNull(idempotencyRecords.outcome);
  await db
    .update(idempotencyRecords)
    .set({ status: saved.status, response: saved.sealedBody, cvcExpiresAt: saved.cvcExpiresAt, detokenized: saved.sealedDetokenized })
    .where(and(recordOf(scope), isNull(idempotencyRecords.status), holder));
}

/** Drops the claim made at `claimedAt`, unless its write was committed: a retry must then answer what it wrote. */
export async function releaseKey(db: Database, scope: IdempotencyScope, claimedAt: number): Promise<void> {
  await db.delete(idempotencyRecords).where(openClaimOf(scope, claimedAt));
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
