import { and, count, desc, eq, inArray, sql } from "drizzle-orm";
import type { SQLiteInsertValue } from "drizzle-orm/sqlite-core";
import { type Database, failedOn } from "../db/client";
import { type MarkQuery, marked } from "../db/commit-marks";
import { apiKeys, applications, consoleSessions } from "../db/control-tables";
import { namedResourcesPage } from "../db/pages";
import type { ListFilter } from "../http/schemas";

export type ApplicationRow = typeof applications.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;

const application = (tenantId: string, id: string) => and(eq(applications.tenantId, tenantId), eq(applications.id, id));
const keysOf = (tenantId: string, applicationId: string) => and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.applicationId, applicationId));

/**
 * The application and its first key (when it gets one), with the commit mark of the request's
 * idempotency claim (when it has one), all or none.
 */
export async function insertApplication(
  db: Database,
  row: ApplicationRow,
  key: ApiKeyRow | null,
  mark: MarkQuery | null = null,
): Promise<void> {
  await db.batch([db.insert(applications).values(row), ...(key === null ? [] : [db.insert(apiKeys).values(key)]), ...marked(db, mark)]);
}

export async function findApplication(db: Database, tenantId: string, id: string): Promise<ApplicationRow | undefined> {
  const [row] = await db.select().from(applications).where(application(tenantId, id)).limit(1);
  return row;
}

export function applicationsAmong(db: Database, tenantId: string, ids: string[]): Promise<ApplicationRow[]> {
  return db
    .select()
    .from(applications)
    .where(and(eq(applications.tenantId, tenantId), inArray(applications.id, ids)));
}

export function applicationsPage(db: Database, tenantId: string, filter: ListFilter) {
  return namedResourcesPage(db, applications, tenantId, filter);
}

export async function updateApplication(
  db: Database,
  tenantId: string,
  id: string,
  changes: Pick<ApplicationRow, "name" | "permissions" | "rules" | "allowedOrigins" | "modifiedBy" | "modifiedAt">,
): Promise<ApplicationRow | undefined> {
  const [row] = await db.update(applications).set(changes).where(application(tenantId, id)).returning();
  return row;
}

/** The application, every key of it and every console session signed in with one, at once. */
export async function deleteApplication(db: Database, tenantId: string, id: string): Promise<void> {
  await db.batch([
    db.delete(apiKeys).where(keysOf(tenantId, id)),
    db.delete(consoleSessions).where(and(eq(consoleSessions.tenantId, tenantId), eq(consoleSessions.applicationId, id))),
    db.delete(applications).where(application(tenantId, id)),
  ]);
}

export async function keyCount(db: Database, tenantId: string, applicationId: string): Promise<number> {
  const [existing] = await db.select({ total: count() }).from(apiKeys).where(keysOf(tenantId, applicationId));
  return existing?.total ?? 0;
}

/**
 * A key, with the commit mark of the request's idempotency claim (when it has one), both or neither,
 * while its application exists and holds fewer than `below` keys: otherwise the batch fails
 * (isKeyRefusedError) and nothing of it is written.
 */
export async function insertKey(db: Database, key: ApiKeyRow, below: number, mark: MarkQuery | null = null): Promise<void> {
  const insert = db.insert(apiKeys).values(beside(key, below));
  // The mark first: a batch that another attempt of the request committed fails on it (isMarkTakenError), not on the key.
  await (mark === null ? db.batch([insert]) : db.batch([mark(db), insert]));
}

/**
 * The key with its application's id read in the statement that writes it: the id while the
 * application exists (and, with `below`, holds fewer keys than that), else NULL, which NOT NULL
 * refuses, failing the statement's whole batch. A request that checked the application before its
 * write cannot then leave a key beside a deleted application, or past the limit when it raced
 * another request's key.
 */
function beside(key: ApiKeyRow, below?: number): SQLiteInsertValue<typeof apiKeys> {
  const within =
    below === undefined ? undefined : sql`(SELECT count(*) FROM ${apiKeys} WHERE ${keysOf(key.tenantId, key.applicationId)}) < ${below}`;
  return {
    ...key,
    applicationId: sql`(SELECT ${applications.id} FROM ${applications} WHERE ${and(application(key.tenantId, key.applicationId), within)})`,
  };
}

/** The failure of a batch whose key beside() refused: its application is gone, or holds its most keys. */
export function isKeyRefusedError(error: unknown): boolean {
  return failedOn(error, /NOT NULL constraint failed: api_keys\.application_id/);
}

/**
 * Replaces every key of the application with `key` and marks the application modified, in one
 * batch; when the application does not exist, the batch fails (isKeyRefusedError) and nothing of it
 * is written.
 */
export async function replaceKeys(
  db: Database,
  tenantId: string,
  id: string,
  key: ApiKeyRow,
  modifiedBy: string,
  mark: MarkQuery | null = null,
): Promise<ApplicationRow> {
  // The mark before the key, as in insertKey.
  const results = await db.batch([
    db.delete(apiKeys).where(keysOf(tenantId, id)),
    ...marked(db, mark),
    db.update(applications).set({ modifiedBy, modifiedAt: key.createdAt }).where(application(tenantId, id)).returning(),
    db.insert(apiKeys).values(beside(key)),
  ]);
  // The key's insert fails the batch without the application, which the update then found.
  return (results.at(-2) as ApplicationRow[])[0]!;
}

const KEY_COLUMNS = { id: apiKeys.id, createdAt: apiKeys.createdAt, expiresAt: apiKeys.expiresAt };

export function keysOfApplication(db: Database, tenantId: string, applicationId: string) {
  return db.select(KEY_COLUMNS).from(apiKeys).where(keysOf(tenantId, applicationId)).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
}

/** One key of the application, never its hash. */
export async function findKey(db: Database, tenantId: string, applicationId: string, keyId: string) {
  const [row] = await db
    .select(KEY_COLUMNS)
    .from(apiKeys)
    .where(and(keysOf(tenantId, applicationId), eq(apiKeys.id, keyId)))
    .limit(1);
  return row;
}

/** Whether the key existed (and so was deleted). */
export async function deleteKey(db: Database, tenantId: string, applicationId: string, keyId: string): Promise<boolean> {
  const deleted = await db
    .delete(apiKeys)
    .where(and(keysOf(tenantId, applicationId), eq(apiKeys.id, keyId)))
    .returning({ id: apiKeys.id });
  return deleted.length > 0;
}
