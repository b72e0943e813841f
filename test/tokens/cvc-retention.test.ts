import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { callConfigured } from "../support/configured";
import { dataDatabaseOf, keysOfTenant } from "../support/context";
import { call } from "../support/harness";
import { createToken, patchToken, seedTokenTenant, seedTokenTenantIn } from "../support/tokens";

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };
const { cvc: _cvc, ...CARD_WITHOUT_CVC } = CARD;
const RETENTION_MS = 3_600_000;

async function runCronAt(time: number) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: time, cron: "*/15 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function storedRow(tenantId: string, id: string) {
  const row = await (await dataDatabaseOf(tenantId))
    .prepare("SELECT ciphertext, cvc_expires_at FROM tokens WHERE tenant_id = ? AND id = ?")
    .bind(tenantId, id)
    .first<{ ciphertext: string; cvc_expires_at: number | null }>();
  return row!;
}

/** What the row's ciphertext holds, read with the tenant's key as an attacker with the key would. */
async function storedData(tenantId: string, id: string): Promise<unknown> {
  const keys = await keysOfTenant(tenantId);
  return JSON.parse(await keys.decrypt((await storedRow(tenantId, id)).ciphertext, id));
}

/** A card created where the cvc may be kept for no time at all: its window has passed at once. */
async function cardPastItsWindow(key: string): Promise<string> {
  const created = await callConfigured({ CARD_CVC_RETENTION_S: "0" }, "POST", "/tokens", {
    headers: { "SVC-API-KEY": key },
    body: { type: "card", data: CARD },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return (created.body as { id: string }).id;
}

describe("card security codes are dropped after CARD_CVC_RETENTION_S (PCI DSS 3.3.1)", () => {
  it("a card written with a cvc must lose it CARD_CVC_RETENTION_S after it was created", async () => {
    const tenant = await seedTokenTenant();
    const before = Date.now();
    const token = await createToken(tenant.key, { type: "card", data: CARD });
    const deadline = (await storedRow(tenant.tenantId, token.id)).cvc_expires_at!;
    expect(deadline).toBeGreaterThanOrEqual(before + RETENTION_MS);
    expect(deadline).toBeLessThanOrEqual(Date.now() + RETENTION_MS);
  });

  it("the cron leaves the cvc within the window, and past it rewrites the ciphertext without it", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card", data: CARD });
    const before = await storedRow(tenant.tenantId, token.id);

    await runCronAt(Date.now());
    expect(await storedRow(tenant.tenantId, token.id)).toEqual(before);
    expect(await storedData(tenant.tenantId, token.id)).toEqual(CARD);

    await runCronAt(Date.now() + RETENTION_MS + 1000);
    const after = await storedRow(tenant.tenantId, token.id);
    expect(after.ciphertext).not.toBe(before.ciphertext);
    expect(after.cvc_expires_at).toBeNull();
    expect(await storedData(tenant.tenantId, token.id)).toEqual(CARD_WITHOUT_CVC);
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body).toMatchObject({
      data: CARD_WITHOUT_CVC,
      fingerprint: token.fingerprint,
    });
  });

  it("reads leave the cvc out once the window has passed, before the cron runs", async () => {
    const tenant = await seedTokenTenant();
    const id = await cardPastItsWindow(tenant.key);
    expect(await storedData(tenant.tenantId, id)).toEqual(CARD);
    expect((await call("GET", `/tokens/${id}`, { key: tenant.key })).body.data).toEqual(CARD_WITHOUT_CVC);
  });

  it("search leaves the cvc out once the window has passed", async () => {
    const tenant = await seedTokenTenant();
    const id = await cardPastItsWindow(tenant.key);
    const found = await call("POST", "/tokens/search", { key: tenant.key, body: { query: `id:${id}` } });
    expect(found.body.data.map((token: { data: unknown }) => token.data)).toEqual([CARD_WITHOUT_CVC]);
  });

  it("detokenization leaves the cvc out once the window has passed", async () => {
    const tenant = await seedTokenTenant();
    const id = await cardPastItsWindow(tenant.key);
    const used = await call("POST", "/detokenize", { key: tenant.key, body: { card: `{{ ${id} }}`, cvc: `{{ ${id} | json: '$.cvc' }}` } });
    expect(used.status, JSON.stringify(used.body)).toBe(200);
    expect(used.body).toEqual({ card: CARD_WITHOUT_CVC, cvc: "" });
  });

  it("a patch past the window cannot bring the cvc back", async () => {
    const tenant = await seedTokenTenant();
    const id = await cardPastItsWindow(tenant.key);
    const patched = await patchToken(tenant.key, id, { data: { expiration_year: 2031 } });
    expect(patched.body.data).toEqual({ ...CARD_WITHOUT_CVC, expiration_year: 2031 });
    expect(await storedData(tenant.tenantId, id)).toEqual({ ...CARD_WITHOUT_CVC, expiration_year: 2031 });
    expect((await storedRow(tenant.tenantId, id)).cvc_expires_at).toBeNull();
  });

  it("a patch that leaves the data alone keeps the window; data written with a cvc starts a new one; removing the cvc ends it", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card", data: CARD });
    const deadline = (await storedRow(tenant.tenantId, token.id)).cvc_expires_at!;
    expect((await patchToken(tenant.key, token.id, { metadata: { a: "b" } })).status).toBe(200);
    expect((await storedRow(tenant.tenantId, token.id)).cvc_expires_at).toBe(deadline);
    // With a two-hour retention the new window ends at least an hour after the first one.
    const renewed = await callConfigured({ CARD_CVC_RETENTION_S: "7200" }, "PATCH", `/tokens/${token.id}`, {
      headers: { "SVC-API-KEY": tenant.key, "content-type": "application/merge-patch+json" },
      body: { data: { cvc: "456" } },
    });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect((await storedRow(tenant.tenantId, token.id)).cvc_expires_at).toBeGreaterThanOrEqual(deadline + RETENTION_MS);
    expect((await patchToken(tenant.key, token.id, { data: { cvc: null } })).status).toBe(200);
    expect((await storedRow(tenant.tenantId, token.id)).cvc_expires_at).toBeNull();
  });

  it("cards tokenized through /tokenize get the same window", async () => {
    const tenant = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", { key: tenant.key, body: { card: { type: "card", data: CARD } } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    await runCronAt(Date.now() + RETENTION_MS + 1000);
    expect(await storedData(tenant.tenantId, reply.body.card.id)).toEqual(CARD_WITHOUT_CVC);
  });

  it("only cards with a cvc carry a window, and the cron leaves the others alone", async () => {
    const tenant = await seedTokenTenant();
    const other = await createToken(tenant.key, { type: "token", data: { cvc: "123" } });
    const plainCard = await createToken(tenant.key, { type: "card", data: CARD_WITHOUT_CVC });
    const rows = [await storedRow(tenant.tenantId, other.id), await storedRow(tenant.tenantId, plainCard.id)];
    expect(rows.map((row) => row.cvc_expires_at)).toEqual([null, null]);
    await runCronAt(Date.now() + RETENTION_MS + 1000);
    expect([await storedRow(tenant.tenantId, other.id), await storedRow(tenant.tenantId, plainCard.id)]).toEqual(rows);
  });

  it("a crypto-shredded tenant's cards never hold up another tenant's purge: its cvcs are unreadable already", async () => {
    const shredded = await seedTokenTenantIn("DB_1");
    const kept = await seedTokenTenantIn("DB_1");
    await cardPastItsWindow(shredded.key);
    const card = await cardPastItsWindow(kept.key);
    const shred = await call("DELETE", `/tenants/${shredded.tenantId}`, { headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY } });
    expect(shred.status, JSON.stringify(shred.body)).toBe(200);

    await runCronAt(Date.now());
    expect(await storedData(kept.tenantId, card)).toEqual(CARD_WITHOUT_CVC);
  });
});
