import { and, eq, gt, or } from "drizzle-orm";
import { type PrincipalColumns, principalColumns } from "../auth/storage";
import type { Database } from "../db/client";
import { type MarkQuery, marked } from "../db/commit-marks";
import { applications, proxies } from "../db/control-tables";
import { namedResourcesPage } from "../db/pages";
import type { ListFilter } from "../http/schemas";

export type ProxyRow = typeof proxies.$inferSelect;

const proxy = (tenantId: string, id: string) => and(eq(proxies.tenantId, tenantId), eq(proxies.id, id));

/** The proxy, with the commit mark of the request's idempotency claim (when it has one), both or neither. */
export async function insertProxy(db: Database, row: ProxyRow, mark: MarkQuery | null = null): Promise<void> {
  await db.batch([db.insert(proxies).values(row), ...marked(db, mark)]);
}

export async function findProxy(db: Database, tenantId: string, id: string): Promise<ProxyRow | undefined> {
  const [row] = await db.select().from(proxies).where(proxy(tenantId, id)).limit(1);
  return row;
}

export function proxiesPage(db: Database, tenantId: string, filter: ListFilter) {
  return namedResourcesPage(db, proxies, tenantId, filter);
}

export async function updateProxy(
  db: Database,
  tenantId: string,
  id: string,
  changes: Omit<
    ProxyRow,
    "id" | "tenantId" | "keyHash" | "keyCiphertext" | "previousKeyHash" | "previousKeyExpiresAt" | "createdBy" | "createdAt"
  >,
): Promise<ProxyRow | undefined> {
  const [row] = await db.update(proxies).set(changes).where(proxy(tenantId, id)).returning();
  return row;
}

export async function deleteProxy(db: Database, tenantId: string, id: string): Promise<ProxyRow | undefined> {
  const [deleted] = await db.delete(proxies).where(proxy(tenantId, id)).returning();
  return deleted;
}

/**
 * Replaces the proxy's key, unless it was rolled meanwhile (its key hash is no longer `readKeyHash`);
 * the previous key keeps working until `previousKeyExpiresAt` when that is set.
 */
export async function rollKey(
  db: Database,
  tenantId: string,
  id: string,
  readKeyHash: string,
  changes: Pick<ProxyRow, "keyHash" | "keyCiphertext" | "previousKeyHash" | "previousKeyExpiresAt" | "modifiedBy" | "modifiedAt">,
  mark: MarkQuery | null = null,
): Promise<ProxyRow | undefined> {
  const [[row]] = await db.batch([
    db
      .update(proxies)
      .set(changes)
      .where(and(proxy(tenantId, id), eq(proxies.keyHash, readKeyHash)))
      .returning(),
    ...marked(db, mark),
  ]);
  return row;
}

/**
 * The proxy holding the key with this hash, as its key or as its previous key still in its grace
 * period, with its application's principal columns when it has one.
 */
export async function proxyOfKeyHash(
  db: Database,
  keyHash: string,
  now: number,
): Promise<{ proxy: ProxyRow; application: PrincipalColumns | null } | undefined> {
  const [found] = await db
    .select({ proxy: proxies, application: principalColumns })
    .from(proxies)
    .leftJoin(applications, and(eq(applications.tenantId, proxies.tenantId), eq(applications.id, proxies.applicationId)))
    .where(or(eq(proxies.keyHash, keyHash), and(eq(proxies.previousKeyHash, keyHash), gt(proxies.previousKeyExpiresAt, now))))
    .limit(1);
  return found;
}
