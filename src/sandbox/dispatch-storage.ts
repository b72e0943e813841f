import { and, asc, eq, isNull, lt, ne, sql } from "drizzle-orm";
import type { ScriptOwner } from "../context";
import type { Database } from "../db/client";
import { dispatchScripts } from "../db/control-tables";

/** A script uploaded to the dispatch namespace, as recorded before its upload. */
export interface RecordedScript {
  name: string;
  owner: ScriptOwner;
  /** When the cron first found that no owner runs it; null while one does. */
  unusedSince: number | null;
}

/**
 * Records the script before it is uploaded. Uploading it again (the same owner saving the same code)
 * restarts its grace period, so the cron does not delete a script its owner is about to name again.
 */
export async function recordScript(db: Database, name: string, owner: ScriptOwner, now: number): Promise<void> {
  await db.batch([
    db
      .insert(dispatchScripts)
      .values({ name, tenantId: owner.tenantId, kind: owner.kind, ownerId: owner.id, publishedAt: now, checkedAt: now, unusedSince: null })
      .onConflictDoUpdate({ target: dispatchScripts.name, set: { publishedAt: now, checkedAt: now, unusedSince: null } }),
    // The owner's other versions may be superseded by this one: the cron looks at them a grace
    // period from now, not only at their next look as a live script (a day ahead).
    db
      .update(dispatchScripts)
      .set({ checkedAt: sql`min(${dispatchScripts.checkedAt}, ${now})` })
      .where(and(ofOwner(owner), ne(dispatchScripts.name, name))),
  ]);
}

const ofOwner = (owner: ScriptOwner) =>
  and(
    owner.tenantId === null ? isNull(dispatchScripts.tenantId) : eq(dispatchScripts.tenantId, owner.tenantId),
    eq(dispatchScripts.kind, owner.kind),
    eq(dispatchScripts.ownerId, owner.id),
  );

/** Recorded scripts not checked since `before`, the longest unchecked first. */
export async function scriptsUncheckedSince(db: Database, before: number, limit: number): Promise<RecordedScript[]> {
  const rows = await db
    .select()
    .from(dispatchScripts)
    .where(lt(dispatchScripts.checkedAt, before))
    .orderBy(asc(dispatchScripts.checkedAt))
    .limit(limit);
  return rows.map((row) => ({
    name: row.name,
    owner: { tenantId: row.tenantId, id: row.ownerId, kind: row.kind },
    unusedSince: row.unusedSince,
  }));
}

/**
 * Marks what the cron found of a script at `now`: in use, or unused (since now, unless it was found
 * so before). The next look at it comes a grace period later.
 */
export async function markScriptChecked(db: Database, name: string, now: number, unusedSince: number | null): Promise<void> {
  await db.update(dispatchScripts).set({ checkedAt: now, unusedSince }).where(eq(dispatchScripts.name, name));
}

/** Forgets a script deleted from the namespace. */
export async function forgetScript(db: Database, name: string): Promise<void> {
  await db.delete(dispatchScripts).where(eq(dispatchScripts.name, name));
}

/** How many scripts of the owner other than `name` are recorded, counted up to `limit`. */
export async function otherVersionsOf(db: Database, owner: ScriptOwner, name: string, limit: number): Promise<number> {
  const rows = await db
    .select({ name: dispatchScripts.name })
    .from(dispatchScripts)
    .where(and(ofOwner(owner), ne(dispatchScripts.name, name)))
    .limit(limit);
  return rows.length;
}
