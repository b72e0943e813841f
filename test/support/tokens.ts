import { env } from "cloudflare:test";
import { expect } from "vitest";
import { DATA_DATABASES, dataDatabaseOf, keysOfTenant } from "./context";
import { type ApplicationSpec, call, callRoute, createApplication, seedTenant, type Tenant } from "./harness";

export const TOKEN_PERMISSIONS = ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"];

/** Every token permission on every container, data revealed on read. */
export const REVEAL_EVERYTHING: ApplicationSpec = {
  type: "private",
  rules: [{ priority: 1, container: "/", transform: "reveal", permissions: TOKEN_PERMISSIONS }],
};

export interface TokenTenant extends Tenant {
  /** A private application with REVEAL_EVERYTHING. */
  key: string;
  applicationId: string;
}

/** A fresh tenant with a private application that may do everything with tokens and sees their data. */
export async function seedTokenTenant(): Promise<TokenTenant> {
  const tenant = await seedTenant();
  const application = await createApplication(tenant, REVEAL_EVERYTHING);
  return { ...tenant, key: application.key, applicationId: application.id };
}

/** Like seedTokenTenant, with the tenant placed in the data database named (operators may choose it). */
export async function seedTokenTenantIn(database: string): Promise<TokenTenant> {
  const reply = await callRoute("POST /tenants", 201, {
    body: { name: `placed in ${database}`, database },
    headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
  });
  const tenant = {
    tenantId: reply.body.tenant.id,
    managementKey: reply.body.application.key,
    managementApplicationId: reply.body.application.id,
  };
  const application = await createApplication(tenant, REVEAL_EVERYTHING);
  return { ...tenant, key: application.key, applicationId: application.id };
}

/** POST /tokens that must succeed; returns the token. */
export async function createToken(key: string, body: Record<string, unknown>): Promise<any> {
  const reply = await call("POST", "/tokens", { key, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

export function patchToken(key: string, id: string, body: unknown) {
  return call("PATCH", `/tokens/${id}`, { key, body, contentType: "application/merge-patch+json" });
}

/**
 * Moves a token's expiry into the past in place. The API refuses a past expires_at, and tests may
 * not wait in real time, so this is the one write to a raw table the token tests make.
 */
export async function expireToken(id: string, tenantId?: string): Promise<void> {
  // Chosen ids are unique per tenant only: name the tenant when another may hold the same id.
  const databases = tenantId === undefined ? DATA_DATABASES : [await dataDatabaseOf(tenantId)];
  let changes = 0;
  for (const database of databases) {
    const statement =
      tenantId === undefined
        ? database.prepare("UPDATE tokens SET expires_at = ? WHERE id = ?").bind(Date.now() - 1000, id)
        : database.prepare("UPDATE tokens SET expires_at = ? WHERE tenant_id = ? AND id = ?").bind(Date.now() - 1000, tenantId, id);
    changes += (await statement.run()).meta.changes;
  }
  expect(changes).toBe(1);
}

export const VISA = "4242424242424242";
export const SSN = "123-45-6789";

/** The blind indexes stored for a token, sorted. */
export async function storedBlindIndexes(tokenId: string): Promise<string[]> {
  const found: string[] = [];
  for (const database of DATA_DATABASES) {
    const { results } = await database
      .prepare("SELECT blind_index FROM token_search_index WHERE token_id = ?")
      .bind(tokenId)
      .all<{ blind_index: string }>();
    found.push(...results.map((row) => row.blind_index));
  }
  return found.sort();
}

/** What the blind indexes of these values must be for the tenant, sorted. */
export async function expectedBlindIndexes(tenantId: string, values: string[]): Promise<string[]> {
  const keys = await keysOfTenant(tenantId);
  return (await Promise.all(values.map((value) => keys.blindIndex(value)))).sort();
}
