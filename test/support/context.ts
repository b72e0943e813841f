import { env } from "cloudflare:test";
import type { RequestContext, TenantContext } from "../../src/context";
import type { Bindings } from "../../src/env";
import { requestContextOf } from "../../src/runtime/context";

/** A request context, as middleware builds one, for tests that call a service or the sandbox directly. */
export function requestContext(bindings: Bindings = env): RequestContext {
  return requestContextOf(bindings, `test/${crypto.randomUUID()}`);
}

/** The context of a tenant the directory knows, as authentication builds it. */
export function tenantContext(tenantId: string, bindings: Bindings = env): Promise<TenantContext> {
  return requestContext(bindings).forTenant(tenantId);
}

/** A context for an owner that is no tenant of the directory (sandbox tests run code for made-up tenants). */
export function sandboxContext(tenantId: string, bindings: Bindings = env): TenantContext {
  return requestContext(bindings).placed(tenantId, "DB");
}

/** The data databases the test pool binds, by binding. */
export const DATA_BINDINGS: Record<string, D1Database> = { DB_1: env.DB_1, DB_2: env.DB_2 };

/** Every data database the test pool binds, for tests that look for rows wherever they are. */
export const DATA_DATABASES: D1Database[] = Object.values(DATA_BINDINGS);

/** The control database and every data database the test pool binds, by binding. */
export const ALL_DATABASES: Record<string, D1Database> = { DB: env.DB, ...DATA_BINDINGS };

/** The data database that holds a tenant's tokens, for tests that look at stored rows. */
export async function dataDatabaseOf(tenantId: string): Promise<D1Database> {
  return (await tenantContext(tenantId)).db.$client;
}

/** A tenant's data keys, as the vault holds them: for tests that read stored ciphertexts as an attacker with the keys would. */
export function keysOfTenant(tenantId: string) {
  return requestContext().keysOf(tenantId);
}
