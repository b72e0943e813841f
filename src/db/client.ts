import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { Bindings } from "../env";
import * as schema from "./schema";

export type Database = DrizzleD1Database<typeof schema> & { $client: D1Database };

const clients = new WeakMap<D1Database, Database>();

/**
 * The one seam through which storage is reached, called only by the request context
 * (src/context.ts). Today every tenant lives in the `DB` binding; spreading tenants over several D1
 * databases means choosing the binding for `tenantId` here, nowhere else.
 */
export function databaseOf(env: Bindings, _tenantId?: string): Database {
  let client = clients.get(env.DB);
  if (!client) {
    client = drizzle(env.DB, { schema });
    clients.set(env.DB, client);
  }
  return client;
}
