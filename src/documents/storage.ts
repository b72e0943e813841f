import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { documents } from "../db/control-tables";

export type DocumentRow = typeof documents.$inferSelect;

const documentOf = (tenantId: string, id: string) => and(eq(documents.tenantId, tenantId), eq(documents.id, id));

/** Where a document's bytes are in the bucket: under its tenant, so a shredded tenant's are found by prefix. */
export const objectKeyOf = (tenantId: string, id: string) => `${tenantPrefixOf(tenantId)}${id}`;
export const tenantPrefixOf = (tenantId: string) => `documents/${tenantId}/`;

export async function insertDocument(db: Database, row: DocumentRow): Promise<void> {
  await db.insert(documents).values(row);
}

export async function findDocument(db: Database, tenantId: string, id: string): Promise<DocumentRow | undefined> {
  const [row] = await db.select().from(documents).where(documentOf(tenantId, id)).limit(1);
  return row;
}

export async function deleteDocument(db: Database, tenantId: string, id: string): Promise<boolean> {
  const deleted = await db.delete(documents).where(documentOf(tenantId, id)).returning({ id: documents.id });
  return deleted.length === 1;
}
