import { and, eq } from "drizzle-orm";
import { type PrincipalColumns, principalColumns } from "../auth/storage";
import type { Database } from "../db/client";
import { namedResourcesPage } from "../db/pages";
import { applications, proxies } from "../db/schema";
import type { ListFilter } from "../http/schemas";

export type ProxyRow = typeof proxies.$inferSelect;

const proxy = (tenantId: string, id: string) => and(eq(proxies.tenantId, tenantId), eq(proxies.id, id));

export async function insertProxy(db: Database, row: ProxyRow): Promise<void> {
  await db.insert(proxies).values(row);
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
  changes: Omit<ProxyRow, "id" | "tenantId" | "keyHash" | "keyCiphertext" | "createdBy" | "createdAt">,
): Promise<ProxyRow | undefined> {
  const [row] = await db.update(proxies).set(changes).where(proxy(tenantId, id)).returning();
  return row;
}

export async function deleteProxy(db: Database, tenantId: string, id: string): Promise<ProxyRow | undefined> {
  const [deleted] = await db.delete(proxies).where(proxy(tenantId, id)).returning();
  return deleted;
}

/** The proxy holding the key with this hash, with its application's principal columns when it has one. */
export async function proxyOfKeyHash(
  db: Database,
  keyHash: string,
): Promise<{ proxy: ProxyRow; application: PrincipalColumns | null } | undefined> {
  const [found] = await db
    .select({ proxy: proxies, application: principalColumns })
    .from(proxies)
    .leftJoin(applications, and(eq(applications.tenantId, proxies.tenantId), eq(applications.id, proxies.applicationId)))
    .where(eq(proxies.keyHash, keyHash))
    .limit(1);
  return found;
}
