import { and, desc, eq, lte, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { consoleSessions } from "../db/control-tables";

export type ConsoleSessionRow = typeof consoleSessions.$inferSelect;

/**
 * Inserts the session and, in the same batch, deletes the application's sessions beyond its newest
 * `maxPerApplication` (in the order they were inserted): signing in again and again cannot grow the
 * control database, which every tenant shares, and the person signing in is never refused.
 */
export async function insertSession(db: Database, row: ConsoleSessionRow, maxPerApplication: number): Promise<void> {
  const ofApplication = and(eq(consoleSessions.tenantId, row.tenantId), eq(consoleSessions.applicationId, row.applicationId));
  const newest = db
    .select({ id: consoleSessions.id })
    .from(consoleSessions)
    .where(ofApplication)
    .orderBy(desc(sql`rowid`))
    .limit(maxPerApplication);
  await db.batch([
    db.insert(consoleSessions).values(row),
    db.delete(consoleSessions).where(and(ofApplication, sql`${consoleSessions.id} NOT IN ${newest}`)),
  ]);
}

export async function findSessionByTokenHash(db: Database, tokenHash: string): Promise<ConsoleSessionRow | undefined> {
  const [row] = await db.select().from(consoleSessions).where(eq(consoleSessions.tokenHash, tokenHash)).limit(1);
  return row;
}

/**
 * Renews the session from `now`, unless another request renewed it since `renewedAt` (then that
 * one's renewal stands): one write, whichever request wins.
 */
export async function renewSession(db: Database, session: ConsoleSessionRow, now: number, expiresAt: number): Promise<void> {
  await db
    .update(consoleSessions)
    .set({ renewedAt: now, expiresAt })
    .where(
      and(
        eq(consoleSessions.tenantId, session.tenantId),
        eq(consoleSessions.id, session.id),
        eq(consoleSessions.renewedAt, session.renewedAt),
      ),
    );
}

export async function deleteSession(db: Database, tenantId: string, id: string): Promise<void> {
  await db.delete(consoleSessions).where(and(eq(consoleSessions.tenantId, tenantId), eq(consoleSessions.id, id)));
}

/** Ended sessions, at most `limit` of them; answers how many went. */
export async function purgeEndedSessions(db: Database, now: number, limit: number): Promise<number> {
  const ended = db.select({ id: consoleSessions.id }).from(consoleSessions).where(lte(consoleSessions.expiresAt, now)).limit(limit);
  const deleted = await db.delete(consoleSessions).where(sql`${consoleSessions.id} IN ${ended}`).returning({ id: consoleSessions.id });
  return deleted.length;
}
