import { expect } from "vitest";
import { dataDatabaseOf } from "./context";
import { call, createApplication } from "./harness";
import { seedTokenTenant, type TokenTenant } from "./tokens";

export const INTENT_PERMISSIONS = ["token-intent:create", "token-intent:read", "token-intent:delete"];

/** A card as a shopper types it, with its security code. */
export const CARD = { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" };

export interface IntentTenant extends TokenTenant {
  /** A checkout's public key: it may create tokens and intents. */
  browserKey: string;
  /** A merchant server's private key: every intent permission; token create, read and use revealed; session:authorize. */
  serverKey: string;
}

/** A tenant with a checkout's public key and a server key that reads, deletes and converts intents, sees tokens' data and authorizes sessions. */
export async function seedIntentTenant(): Promise<IntentTenant> {
  const tenant = await seedTokenTenant();
  const browser = await createApplication(tenant, { type: "public", permissions: ["token:create", "token-intent:create"] });
  const server = await createApplication(tenant, {
    type: "private",
    rules: [
      {
        priority: 1,
        container: "/",
        transform: "reveal",
        permissions: ["token:create", "token:read", "token:use", "session:authorize", ...INTENT_PERMISSIONS],
      },
    ],
  });
  return { ...tenant, browserKey: browser.key, serverKey: server.key };
}

/** POST /token-intents that must succeed; returns the intent. */
export async function createIntent(key: string, body: Record<string, unknown> = { type: "card", data: CARD }): Promise<any> {
  const reply = await call("POST", "/token-intents", { key, body });
  expect(reply.status, reply.text).toBe(201);
  return reply.body;
}

/** POST /tokens converting the intent, with the token members given. */
export function convertIntent(key: string, intentId: string, members: Record<string, unknown> = {}) {
  return call("POST", "/tokens", { key, body: { token_intent_id: intentId, ...members } });
}

/** Moves an intent's expiry into the past in place: tests may not wait a day (as expireToken does for tokens). */
export async function expireIntent(tenantId: string, id: string): Promise<void> {
  const result = await (await dataDatabaseOf(tenantId))
    .prepare("UPDATE token_intents SET expires_at = ? WHERE tenant_id = ? AND id = ?")
    .bind(Date.now() - 1000, tenantId, id)
    .run();
  expect(result.meta.changes).toBe(1);
}

/** How many intents the tenant's data database holds, expired or not. */
export async function storedIntents(tenantId: string): Promise<number> {
  const row = await (await dataDatabaseOf(tenantId))
    .prepare("SELECT count(*) AS n FROM token_intents WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ n: number }>();
  return row!.n;
}
