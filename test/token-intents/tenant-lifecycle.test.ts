import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DATA_BINDINGS, dataDatabaseOf } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication } from "../support/harness";
import { CARD, convertIntent, createIntent, INTENT_PERMISSIONS } from "../support/token-intents";
import { REVEAL_EVERYTHING, seedTokenTenantIn } from "../support/tokens";

/*
 * What happens to a tenant's intents when its keys are rotated, when it moves to another data database
 * and when it is crypto-shredded: an intent lives through the first two, whole, and goes with the third.
 */

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

/** A tenant in the data database named, with a checkout's public key and a server key that converts. */
async function seedIn(database: string) {
  const tenant = await seedTokenTenantIn(database);
  const browser = await createApplication(tenant, { type: "public", permissions: ["token-intent:create"] });
  const server = await createApplication(tenant, {
    type: "private",
    rules: [{ ...REVEAL_EVERYTHING.rules![0]!, permissions: [...REVEAL_EVERYTHING.rules![0]!.permissions, ...INTENT_PERMISSIONS] }],
  });
  return { ...tenant, browserKey: browser.key, serverKey: server.key };
}

async function intentsIn(database: string, tenantId: string): Promise<number> {
  const row = await DATA_BINDINGS[database]!.prepare("SELECT count(*) AS n FROM token_intents WHERE tenant_id = ?")
    .bind(tenantId)
    .first<{ n: number }>();
  return row!.n;
}

describe("token intents through a tenant's life", () => {
  it("a data-key rotation re-encrypts them, and they still read and convert once the old key is destroyed", {
    timeout: 30_000,
  }, async () => {
    const tenant = await seedIn("DB_1");
    const intent = await createIntent(tenant.browserKey);
    const started = await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    expect(started.status, started.text).toBe(202);
    await expect
      .poll(async () => (await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator })).body.state, { timeout: 25_000 })
      .toBe("done");
    const row = await (await dataDatabaseOf(tenant.tenantId))
      .prepare("SELECT ciphertext FROM token_intents WHERE tenant_id = ? AND id = ?")
      .bind(tenant.tenantId, intent.id)
      .first<{ ciphertext: string }>();
    expect(row!.ciphertext).toMatch(/^v2\./);
    expect((await call("GET", `/token-intents/${intent.id}`, { key: tenant.serverKey })).body.card).toMatchObject({ last4: "4242" });
    const converted = await convertIntent(tenant.serverKey, intent.id);
    expect(converted.status, converted.text).toBe(201);
    expect(converted.body.data.number).toBe(CARD.number);
  });

  it("a move to another data database takes them along, and leaves none behind", async () => {
    const tenant = await seedIn("DB_1");
    const intent = await createIntent(tenant.browserKey);
    const moved = await call("POST", `/tenants/${tenant.tenantId}/move`, { body: { database: "DB_2" }, headers: operator });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.phase).toBe("done");
    expect(await intentsIn("DB_2", tenant.tenantId)).toBe(1);
    expect(await intentsIn("DB_1", tenant.tenantId)).toBe(0);
    const converted = await convertIntent(tenant.serverKey, intent.id);
    expect(converted.status, converted.text).toBe(201);
  });

  it("a crypto-shredded tenant's intents are counted in its remaining rows, and the cron purges them", async () => {
    const tenant = await seedIn("DB_2");
    for (let i = 0; i < 3; i++) await createIntent(tenant.browserKey);
    const shredded = await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator });
    expect(shredded.status, shredded.text).toBe(200);
    expect(shredded.body.remaining_rows).toBeGreaterThanOrEqual(3);
    await runCron();
    expect(await intentsIn("DB_2", tenant.tenantId)).toBe(0);
  });
});
