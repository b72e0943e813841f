import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { Bindings } from "../env";
import { ConfigurationError } from "../errors";

/**
 * drizzle over D1, queried through its query builder with the tables of control-tables.ts and
 * data-tables.ts. It is given no schema: that is only for its relational queries (`db.query.…`),
 * which the vault does not use, and drizzle walks a schema's every table each time it is built,
 * which a session does per request (about 12 µs of a proxy call's CPU).
 */
export type Database = DrizzleD1Database & { $client: D1Database };

/**
 * Whether a query failed on the constraint `failure` matches (D1's message, such as `NOT NULL
 * constraint failed: table.column`), found in the error or any error it wraps: drizzle wraps D1's
 * error in its own.
 */
export function failedOn(error: unknown, failure: RegExp): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (failure.test(cause.message)) return true;
  }
  return false;
}

/** The control database's binding: the directory of tenants and what resolves a credential. */
export const CONTROL_BINDING = "DB";
const DATA_BINDING = /^DB_(\d+)$/;

const clients = new WeakMap<D1Database, Database>();

/**
 * The bindings of the data databases, in order: `DB_1 … DB_N` when any is bound, else the control
 * database serves as the one data database (what `npm start` runs).
 */
export function dataBindings(env: Bindings): string[] {
  const numbered = Object.keys(env).flatMap((name) => {
    const match = DATA_BINDING.exec(name);
    return match ? [{ name, number: Number(match[1]) }] : [];
  });
  return numbered.length === 0 ? [CONTROL_BINDING] : numbered.sort((a, b) => a.number - b.number).map(({ name }) => name);
}

/**
 * The data database bound as `binding`, through a D1 session (read replication): `constraint` is
 * "first-primary", "first-unconstrained" or a bookmark the reads must be at least as fresh as.
 */
export function sessionOf(env: Bindings, binding: string, constraint: string): { db: Database; session: D1DatabaseSession } {
  const session = databaseOf(env, binding).$client.withSession(constraint);
  // drizzle needs only prepare and batch, which a session has.
  return { db: drizzle(session as unknown as D1Database), session };
}

/**
 * The database bound as `binding`, through drizzle. Called only by the request context
 * (src/runtime/context.ts), which knows which binding a tenant's data lives in.
 */
export function databaseOf(env: Bindings, binding: string = CONTROL_BINDING): Database {
  const d1 = (env as unknown as Record<string, unknown>)[binding] as D1Database | undefined;
  if (!d1) throw new ConfigurationError(`No D1 database is bound as ${binding}`);
  let client = clients.get(d1);
  if (!client) {
    client = drizzle(d1);
    clients.set(d1, client);
  }
  return client;
}
