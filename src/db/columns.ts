import { integer, text } from "drizzle-orm/sqlite-core";

/** Who created and last changed a row, and when: the columns every tenant-owned configuration row carries. */
export const auditColumns = {
  createdBy: text("created_by"),
  createdAt: integer("created_at").notNull(),
  modifiedBy: text("modified_by"),
  modifiedAt: integer("modified_at"),
};
