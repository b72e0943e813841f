import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { signingClock } from "../../src/apple-pay/ec-v1";
import { entryWhere } from "../support/audit";
import { runCron } from "../support/cron";
import { CRYPTOGRAM_3DS, paymentMessage, sealEcV2 } from "../support/google-pay";
import { registerGooglePayMerchant } from "../support/google-pay-merchants";
import { call, createApplication, dumpDatabase, expectProblem, type Reply, seedTenant, type Tenant } from "../support/harness";
import { createProxy, expectProxyError, invoke, loopback } from "../support/proxies";
import { createFormula, createReactor, react, reactAsync, reactionResult, settledReaction } from "../support/reactors";
import { createApplePayToken, registerApplePayCertificates } from "../wallets/apple-pay-merchant";
import { GALA_SIGNED_AT, GALA_TOKEN } from "../wallets/apple-pay-vector";

/*
 * Rules 2 and 7 for what a wallet token becomes (issue 38): the google-pay resource of a
 * CRYPTOGRAM_3DS token and the Apple Pay token. Each holds a device card and a cryptogram that is
 * sensitive authentication data, read by `{{ google_pay: <id> | … }}` and `{{ apple_pay: <id> | … }}`.
 * Attacked here as an open proxy's anonymous partner (an oracle of the data in which expressions
 * fail), as a caller replaying an idempotent call (after the resource is gone, after the cryptogram's
 * retention), and as an operator's rotation and shred (what is left readable after them).
 */

const MERCHANT_IDENTIFIER = "wallet-attacks";
/** The Apple Pay token's device card and cryptogram (gala's published vector, test/wallets/apple-pay-vector.ts). */
const APPLE_DPAN = "5353756319181169";
const APPLE_CRYPTOGRAM = "AMwBRjPWDnAgAA7Rls7mAoABFA==";
/** CARD_CVC_RETENTION_S as the suite runs it (wrangler.toml's default). */
const CRYPTOGRAM_RETENTION_MS = 3_600_000;
const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

/** A tenant with a Google Pay merchant registered and a google-pay resource made from a CRYPTOGRAM_3DS token. */
async function googlePayTenant(): Promise<{ tenant: Tenant; resourceId: string }> {
  const tenant = await seedTenant();
  await registerGooglePayMerchant(tenant.managementKey, MERCHANT_IDENTIFIER);
  const creator = await createApplication(tenant, { type: "private", permissions: ["google-pay:create"] });
  const token = sealEcV2(paymentMessage(CRYPTOGRAM_3DS), { recipientId: `merchant:${MERCHANT_IDENTIFIER}` });
  const reply = await call("POST", "/google-pay", { key: creator.key, body: { google_payment_data: token } });
  expect(reply.status, reply.text).toBe(201);
  return { tenant, resourceId: reply.body.google_pay.id };
}

/** A tenant holding one resource of each kind. */
async function walletTenant() {
  const { tenant, resourceId } = await googlePayTenant();
  await registerApplePayCertificates(tenant.managementKey);
  const { token } = await createApplePayToken(tenant);
  return { tenant, googlePayId: resourceId, applePayId: token.id };
}

/** Ten expressions per position, one per digit: the one that does not fail names the digit. */
function probes(expression: string, positions: number[]): Record<string, string> {
  const body: Record<string, string> = {};
  for (const i of positions) {
    for (let d = 0; d <= 9; d++) body[`p${i}_${d}`] = `{{ ${expression} | slice: ${i}, 1 | replace: '${d}', 'true' | to_boolean }}`;
  }
  return body;
}

function expectNotReplayed(reply: Reply, reason: RegExp) {
  const problem = expectProblem(reply, 409);
  expect(problem.detail).toMatch(/but its answer is not replayed: /);
  expect(problem.detail).toMatch(reason);
}

describe("rules 2 and 7: what a wallet resource gives away", () => {
  it("an open proxy's anonymous partner cannot read a Google Pay or Apple Pay device card, nor its cryptogram, from which expressions fail", async () => {
    const { tenant, googlePayId, applePayId } = await walletTenant();
    // The proxy's application may read both whole: the data is meant for the destination.
    const application = await createApplication(tenant, {
      type: "private",
      permissions: ["token:use", "google-pay:reveal", "apple-pay:read", "apple-pay:reveal"],
    });
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: application.id },
      destination_url: loopback("/respond?body=ok"),
    });
    for (const [expression, positions] of [
      [`google_pay: ${googlePayId} | json: '$.data.number'`, [0, 1, 2, 3, 4, 5, 6, 7]],
      [`google_pay: ${googlePayId} | json: '$.data.number'`, [8, 9, 10, 11, 12, 13, 14, 15]],
      [`google_pay: ${googlePayId} | json: '$.authentication.threeds_cryptogram'`, [0, 1, 2, 3]],
      [`apple_pay: ${applePayId} | json: '$.data.number'`, [0, 1, 2, 3, 4, 5, 6, 7]],
      [`apple_pay: ${applePayId} | json: '$.authentication.threeds_cryptogram'`, [0, 1, 2, 3]],
    ] as const) {
      // Every probe answers alike: the call goes through and the destination's answer comes back.
      const reply = await invoke("POST", "", { proxyKey: proxy.key, body: probes(expression, [...positions]) });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.text).toBe("ok");
    }
  });

  it("an open proxy whose application lacks token:use detokenizes no wallet resource for its anonymous partner: a 403, nothing forwarded", async () => {
    const { tenant, googlePayId, applePayId } = await walletTenant();
    // A backend that reads both resources, not one that may detokenize: every other way in needs token:use.
    const reader = await createApplication(tenant, {
      type: "private",
      permissions: ["google-pay:reveal", "apple-pay:read", "apple-pay:reveal"],
    });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: reader.id } });
    for (const [expression, dpan] of [
      [`{{ google_pay: ${googlePayId} | json: '$.data.number' }}`, CRYPTOGRAM_3DS.pan],
      [`{{ apple_pay: ${applePayId} | json: '$.data.number' }}`, APPLE_DPAN],
    ] as const) {
      const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { card: expression } });
      expect(reply.text).not.toContain(dpan);
      expect(expectProxyError(reply, 403).detail).toMatch(/token:use/);
    }
  });

  it("each use of a wallet resource through an open proxy is an audit entry naming it, its partner as actor anonymous, holding no card", async () => {
    const { tenant, googlePayId, applePayId } = await walletTenant();
    const application = await createApplication(tenant, {
      type: "private",
      permissions: ["token:use", "google-pay:reveal", "apple-pay:read", "apple-pay:reveal"],
    });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: application.id } });
    const body = {
      google: `{{ google_pay: ${googlePayId} | json: '$.data.number' }}`,
      apple: `{{ apple_pay: ${applePayId} | json: '$.authentication.threeds_cryptogram' }}`,
    };
    expect((await invoke("POST", "", { proxyKey: proxy.key, body })).status).toBe(200);
    for (const [entityType, id] of [
      ["google-pay", googlePayId],
      ["apple-pay", applePayId],
    ]) {
      const entry = await entryWhere(
        tenant,
        { entity_type: entityType! },
        (candidate) => candidate.entity_id === id && candidate.operation === "use",
      );
      // The partner acts (docs/operations.md, "calls"); the proxy's application only detokenizes for it.
      expect(entry, entityType).toMatchObject({ actor_id: null, actor_type: "anonymous", status: 200 });
      for (const secret of [CRYPTOGRAM_3DS.pan, CRYPTOGRAM_3DS.cryptogram, APPLE_DPAN, APPLE_CRYPTOGRAM]) {
        expect(JSON.stringify(entry)).not.toContain(secret);
      }
    }
  });

  it("a react replayed after the Google Pay resource or Apple Pay token was deleted is a 409 that shows neither card", async () => {
    const { tenant, googlePayId, applePayId } = await walletTenant();
    const formula = await createFormula(tenant, { code: "module.exports = async (req) => ({ raw: req.args });" });
    const reactor = await createReactor(tenant, formula.id);
    const caller = await createApplication(tenant, {
      type: "private",
      permissions: ["token:use", "google-pay:reveal", "google-pay:delete", "apple-pay:read", "apple-pay:reveal", "apple-pay:delete"],
    });
    for (const [args, path, dpan] of [
      [{ card: `{{ google_pay: ${googlePayId} | json: '$.data.number' }}` }, `/google-pay/${googlePayId}`, CRYPTOGRAM_3DS.pan],
      [{ card: `{{ apple_pay: ${applePayId} | json: '$.data.number' }}` }, `/apple-pay/${applePayId}`, APPLE_DPAN],
    ] as const) {
      const idempotent = { "SVC-IDEMPOTENCY-KEY": `deleted-${path}` };
      const first = await react(caller.key, reactor.id, args, idempotent);
      expect(first.status, first.text).toBe(200);
      expect(first.text).toContain(dpan);
      expect((await call("DELETE", path, { key: caller.key })).status).toBeLessThan(300);
      const replay = await react(caller.key, reactor.id, args, idempotent);
      expectNotReplayed(replay, /does not exist or has expired/);
      expect(replay.text).not.toContain(dpan);
    }
  });

  it("a react that showed a wallet cryptogram is not replayed past the cryptogram's retention, before or after the cron", async () => {
    const { tenant, googlePayId, applePayId } = await walletTenant();
    const formula = await createFormula(tenant, { code: "module.exports = async (req) => ({ raw: req.args });" });
    const reactor = await createReactor(tenant, formula.id);
    const caller = await createApplication(tenant, {
      type: "private",
      permissions: ["token:use", "google-pay:reveal", "apple-pay:read", "apple-pay:reveal"],
    });
    const args = {
      google: `{{ google_pay: ${googlePayId} | json: '$.authentication.threeds_cryptogram' }}`,
      apple: `{{ apple_pay: ${applePayId} | json: '$.authentication.threeds_cryptogram' }}`,
    };
    const idempotent = { "SVC-IDEMPOTENCY-KEY": "cryptograms" };
    const first = await react(caller.key, reactor.id, args, idempotent);
    expect(first.status, first.text).toBe(200);
    expect(first.body.raw).toEqual({ google: CRYPTOGRAM_3DS.cryptogram, apple: APPLE_CRYPTOGRAM });
    // Within the retention the replay is the first answer.
    expect((await react(caller.key, reactor.id, args, idempotent)).body).toEqual(first.body);

    await runCron(Date.now() + CRYPTOGRAM_RETENTION_MS + 60_000);
    const replay = await react(caller.key, reactor.id, args, idempotent);
    expectNotReplayed(replay, /retention period has passed/);
    expect(replay.text).not.toContain(CRYPTOGRAM_3DS.cryptogram);
    expect(replay.text).not.toContain(APPLE_CRYPTOGRAM);
    // Nor is either kept in a row: both columns were cleared by the cron.
    for (const [table, id] of [
      ["google_pay_resources", googlePayId],
      ["apple_pay_tokens", applePayId],
    ]) {
      const row = await env.DB.prepare(`SELECT authentication_ciphertext AS sealed FROM ${table} WHERE id = ?`).bind(id).first();
      expect(row, table).toEqual({ sealed: null });
    }
  });

  it("an async reaction's result that showed a wallet card and cryptogram is read only by a key shown as much, and goes with the cryptogram", {
    timeout: 60_000,
  }, async () => {
    const { tenant, googlePayId, applePayId } = await walletTenant();
    const formula = await createFormula(tenant, { code: "module.exports = async (req) => ({ raw: req.args });" });
    const reactor = await createReactor(tenant, formula.id);
    const revealer = await createApplication(tenant, {
      type: "private",
      permissions: ["token:use", "google-pay:reveal", "apple-pay:read", "apple-pay:reveal"],
    });
    const masked = await createApplication(tenant, { type: "private", permissions: ["token:use", "google-pay:read", "apple-pay:read"] });
    const args = {
      google: `{{ google_pay: ${googlePayId} | json: '$.data.number' }}`,
      google_cryptogram: `{{ google_pay: ${googlePayId} | json: '$.authentication.threeds_cryptogram' }}`,
      apple: `{{ apple_pay: ${applePayId} | json: '$.data.number' }}`,
      apple_cryptogram: `{{ apple_pay: ${applePayId} | json: '$.authentication.threeds_cryptogram' }}`,
    };
    const queued = await reactAsync(revealer.key, reactor.id, args);
    expect(queued.status, queued.text).toBe(202);
    const settled = await settledReaction(revealer.key, reactor.id, queued.body.asyncReactorRequestId);
    expect(settled.status, JSON.stringify(settled)).toBe("completed");
    expect(JSON.stringify(settled)).toContain(CRYPTOGRAM_3DS.cryptogram);

    // A key that would be shown both masked reads nothing of the result.
    const refused = await reactionResult(masked.key, reactor.id, queued.body.asyncReactorRequestId);
    expectProblem(refused, 403);
    // Kept sealed: no table holds either card or cryptogram in the clear.
    const dump = await dumpDatabase();
    for (const secret of [CRYPTOGRAM_3DS.pan, CRYPTOGRAM_3DS.cryptogram, APPLE_DPAN, APPLE_CRYPTOGRAM]) {
      expect(refused.text).not.toContain(secret);
      expect(dump).not.toContain(secret);
    }

    await runCron(Date.now() + CRYPTOGRAM_RETENTION_MS + 60_000);
    const gone = await reactionResult(revealer.key, reactor.id, queued.body.asyncReactorRequestId);
    expectProblem(gone, 404);
    expect(gone.text).not.toContain(CRYPTOGRAM_3DS.cryptogram);
  });

  it("POST /apple-pay keeps no answer to replay: its idempotency key sent again after the token's deletion, or the key's loss of apple-pay:reveal, shows no BIN", async () => {
    const tenant = await seedTenant();
    await registerApplePayCertificates(tenant.managementKey);
    const permissions = ["apple-pay:create", "apple-pay:read", "apple-pay:reveal", "apple-pay:delete"];
    const creator = await createApplication(tenant, { type: "private", name: "wallet backend", permissions });
    const body = { apple_payment_data: { paymentData: GALA_TOKEN }, expires_at: "2099-01-01T00:00:00Z" };
    const idempotent = (key: string) => ({ key: creator.key, body, headers: { "SVC-IDEMPOTENCY-KEY": key } });
    const clock = vi.spyOn(signingClock, "now").mockReturnValue(GALA_SIGNED_AT + 60_000);
    const BIN = APPLE_DPAN.slice(0, 8);
    let first: Reply;
    let other: Reply;
    try {
      first = await call("POST", "/apple-pay", idempotent("revoked"));
      other = await call("POST", "/apple-pay", idempotent("deleted"));
    } finally {
      clock.mockRestore();
    }
    expect(first.status, first.text).toBe(201);
    expect(first.body.apple_pay.card.bin).toBe(BIN);

    // Past the signing window the request is run again and refused: no answer showing the BIN was kept (were one, it would show here).
    expect((await call("DELETE", `/apple-pay/${other.body.apple_pay.id}`, { key: creator.key })).status).toBe(204);
    const afterDeletion = await call("POST", "/apple-pay", idempotent("deleted"));
    expectProblem(afterDeletion, 400);
    expect(afterDeletion.text).not.toContain(BIN);

    const narrowed = await call("PUT", `/applications/${creator.id}`, {
      key: tenant.managementKey,
      body: { name: "wallet backend", permissions: permissions.filter((permission) => permission !== "apple-pay:reveal") },
    });
    expect(narrowed.status, narrowed.text).toBe(200);
    const afterRevocation = await call("POST", "/apple-pay", idempotent("revoked"));
    expect(afterRevocation.text).not.toContain(BIN);
  });

  it("a key rotation re-seals a Google Pay resource's card and cryptogram, and one whose cryptogram was cleared, and both still read", {
    timeout: 60_000,
  }, async () => {
    const { tenant, resourceId: cleared } = await googlePayTenant();
    await runCron(Date.now() + CRYPTOGRAM_RETENTION_MS + 60_000);
    const creator = await createApplication(tenant, { type: "private", permissions: ["google-pay:create"] });
    const token = sealEcV2(paymentMessage(CRYPTOGRAM_3DS), { recipientId: `merchant:${MERCHANT_IDENTIFIER}` });
    const kept = (await call("POST", "/google-pay", { key: creator.key, body: { google_payment_data: token } })).body.google_pay.id;

    const started = await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    expect(started.status, started.text).toBe(202);
    let status = started.body;
    while (status.state !== "done") {
      expect(status.last_error).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator })).body;
    }
    const rows = await env.DB.prepare(
      "SELECT id, substr(ciphertext, 1, 3) AS card, substr(authentication_ciphertext, 1, 3) AS cryptogram FROM google_pay_resources WHERE tenant_id = ? ORDER BY id = ?",
    )
      .bind(tenant.tenantId, kept)
      .all();
    expect(rows.results).toEqual([
      { id: cleared, card: "v2.", cryptogram: null },
      { id: kept, card: "v2.", cryptogram: "v2." },
    ]);
    const reader = await createApplication(tenant, { type: "private", permissions: ["google-pay:reveal"] });
    const read = await call("GET", `/google-pay/${kept}`, { key: reader.key });
    expect(read.body).toMatchObject({
      data: { number: CRYPTOGRAM_3DS.pan },
      authentication: { threeds_cryptogram: CRYPTOGRAM_3DS.cryptogram },
    });
    expect((await call("GET", `/google-pay/${cleared}`, { key: reader.key })).body.data.number).toBe(CRYPTOGRAM_3DS.pan);
  });

  it("a Google Pay resource made while its tenant is being shredded is not left behind: the cron's purge deletes it", {
    timeout: 120_000,
  }, async () => {
    for (let round = 0; round < 5; round++) {
      const tenant = await seedTenant();
      await registerGooglePayMerchant(tenant.managementKey, MERCHANT_IDENTIFIER);
      const creator = await createApplication(tenant, { type: "private", permissions: ["google-pay:create"] });
      const creates = Array.from({ length: 8 }, () =>
        call("POST", "/google-pay", {
          key: creator.key,
          body: { google_payment_data: sealEcV2(paymentMessage(CRYPTOGRAM_3DS), { recipientId: `merchant:${MERCHANT_IDENTIFIER}` }) },
        }),
      );
      const shredded = call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator });
      const replies = await Promise.all([...creates, shredded]);
      expect(replies.at(-1)!.status, replies.at(-1)!.text).toBe(200);
      await runCron();
      const left = await env.DB.prepare("SELECT count(*) AS n FROM google_pay_resources WHERE tenant_id = ?")
        .bind(tenant.tenantId)
        .first("n");
      expect(left, `round ${round}: ${replies.map((reply) => reply.status).join(" ")}`).toBe(0);
    }
  });

  it("crypto-shredding a tenant deletes its Google Pay resources with its keys, and leaves another tenant's", async () => {
    const { tenant, resourceId } = await googlePayTenant();
    const { tenant: other, resourceId: othersResource } = await googlePayTenant();
    const shredded = await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator });
    expect(shredded.status, shredded.text).toBe(200);
    const count = (tenantId: string) =>
      env.DB.prepare("SELECT count(*) AS n FROM google_pay_resources WHERE tenant_id = ?").bind(tenantId).first("n");
    expect(await count(tenant.tenantId)).toBe(0);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM google_pay_resources WHERE id = ?").bind(resourceId).first("n")).toBe(0);
    expect(await count(other.tenantId)).toBe(1);
    const reader = await createApplication(other, { type: "private", permissions: ["google-pay:reveal"] });
    expect((await call("GET", `/google-pay/${othersResource}`, { key: reader.key })).status).toBe(200);
  });
});
