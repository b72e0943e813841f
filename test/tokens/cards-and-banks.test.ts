import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { call, createApplication, expectProblem, type ApplicationSpec } from "../support/harness";
import { callConfigured } from "../support/configured";
import { createToken, seedTokenTenant } from "../support/tokens";

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };
const BANK = { routing_number: "011000015", account_number: "000123456789" };
const RETENTION_MS = 3_600_000;

async function runCronAt(time: number) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: time, cron: "*/15 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function storedRow(tenantId: string, id: string) {
  return env.DB.prepare("SELECT ciphertext, cvc_expires_at FROM tokens WHERE tenant_id = ? AND id = ?")
    .bind(tenantId, id)
    .first<{ ciphertext: string; cvc_expires_at: number | null }>();
}

/** A POST /tokens that must be refused with a 400; returns its field errors. */
async function refusedData(data: unknown, type = "card"): Promise<Record<string, string[]>> {
  const { key } = await seedTokenTenant();
  const reply = await call("POST", "/tokens", { key, body: { type, data } });
  const problem = expectProblem(reply, 400);
  return problem.errors!;
}

const readingWith = (transform: "reveal" | "mask" | "redact"): ApplicationSpec => ({
  type: "private",
  rules: [{ priority: 1, container: "/", transform, permissions: ["token:create", "token:read", "token:use"] }],
});

describe("card tokens", () => {
  it("stores a card in /pci/high/, fingerprinted by its number, masked to its last four without the cvc", async () => {
    const tenant = await seedTokenTenant();
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const reply = await call("POST", "/tokens", { key: plain.key, body: { type: "card", data: CARD } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toMatchObject({
      type: "card",
      containers: ["/pci/high/"],
      fingerprint_expression: "{{ data.number }}",
      data: { number: "XXXXXXXXXXXX4242", expiration_month: 11, expiration_year: 2030 },
    });
    expect(reply.body.data).not.toHaveProperty("cvc");
    const read = await call("GET", `/tokens/${reply.body.id}`, { key: plain.key });
    expect(read.body.data).toEqual({ number: "XXXXXXXXXXXX4242", expiration_month: 11, expiration_year: 2030 });
  });

  it("reveals the whole card, cvc included, within its retention window", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card", data: CARD });
    expect(token.data).toEqual(CARD);
  });

  it("accepts a card without a cvc", async () => {
    const { key } = await seedTokenTenant();
    const { cvc: _cvc, ...withoutCvc } = CARD;
    expect((await createToken(key, { type: "card", data: withoutCvc })).data).toEqual(withoutCvc);
  });

  it("refuses each bad member at its own path, without echoing the value", async () => {
    const errors = await refusedData({ number: "4242424242424241", expiration_month: 13, expiration_year: 30, cvc: "12", color: "red" });
    expect(errors).toEqual({
      "data.number": ["must pass the Luhn check for type card"],
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
      "data.expiration_year": ["must be a four-digit integer for type card"],
      "data.cvc": ["must be a string of 3 or 4 digits for type card"],
      "data.color": ["is not a member of this type for type card"],
    });
    expect(JSON.stringify(errors)).not.toContain("4242424242424241");
  });

  it("requires the number, month and year, and an object", async () => {
    expect(await refusedData({ cvc: "123" })).toEqual({
      "data.number": ["is required for type card"],
      "data.expiration_month": ["is required for type card"],
      "data.expiration_year": ["is required for type card"],
    });
    expect(await refusedData("4242424242424242")).toEqual({ data: ["must be an object for type card"] });
    expect(await refusedData({ ...CARD, number: "42424242" })).toEqual({ "data.number": ["must be a string of 13 to 19 digits for type card"] });
    expect(await refusedData({ ...CARD, expiration_month: "11" })).toEqual({
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
    });
  });

  it("deduplicates on the number: another cvc is the same card", async () => {
    const { key } = await seedTokenTenant();
    const first = await createToken(key, { type: "card", data: CARD });
    const again = await call("POST", "/tokens", { key, body: { type: "card", data: { ...CARD, cvc: "999" }, deduplicate_token: true } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.id, deduplicated: true, fingerprint: first.fingerprint });
    const otherCard = await createToken(key, { type: "card", data: { ...CARD, number: "5555555555554444" }, deduplicate_token: true });
    expect(otherCard.id).not.toBe(first.id);
  });

  it("is found by type:card but never by data:", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card", data: CARD });
    const byType = await call("POST", "/tokens/search", { key, body: { query: "type:card" } });
    expect(byType.body.data.map((found: { id: string }) => found.id)).toEqual([token.id]);
    const byData = await call("POST", "/tokens/search", { key, body: { query: `data:${CARD.number}` } });
    expect(byData.body.pagination.total_items).toBe(0);
    const indexed = await call("POST", "/tokens", { key, body: { type: "card", data: CARD, search_indexes: ["{{ data.number }}"] } });
    expect(expectProblem(indexed, 400).errors).toHaveProperty("search_indexes");
  });
});

describe("bank tokens", () => {
  it("stores a bank account in /bank/high/, fingerprinted by account and routing, masked to the account's last four", async () => {
    const tenant = await seedTokenTenant();
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const reply = await call("POST", "/tokens", { key: plain.key, body: { type: "bank", data: BANK } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body).toMatchObject({
      type: "bank",
      containers: ["/bank/high/"],
      fingerprint_expression: "{{ data.account_number }}|{{ data.routing_number }}",
      data: { routing_number: "011000015", account_number: "XXXXXXXX6789" },
    });
  });

  it("refuses each bad member at its own path", async () => {
    expect(await refusedData({ routing_number: "011000016", account_number: "12" }, "bank")).toEqual({
      "data.routing_number": ["must pass the ABA routing number checksum for type bank"],
      "data.account_number": ["must be a string of 3 to 17 digits for type bank"],
    });
    expect(await refusedData({ routing_number: "11000015", account_number: "123456", extra: 1 }, "bank")).toEqual({
      "data.routing_number": ["must be a string of 9 digits for type bank"],
      "data.extra": ["is not a member of this type for type bank"],
    });
    expect(await refusedData({}, "bank")).toEqual({
      "data.routing_number": ["is required for type bank"],
      "data.account_number": ["is required for type bank"],
    });
  });

  it("the same account at another bank is another fingerprint", async () => {
    const { key } = await seedTokenTenant();
    const first = await createToken(key, { type: "bank", data: BANK });
    const other = await createToken(key, { type: "bank", data: { ...BANK, routing_number: "021000021" } });
    expect(other.fingerprint).not.toBe(first.fingerprint);
  });
});

describe("object masks", () => {
  const MASK = { last: "{{ data.number | last4 }}", month: "{{ data.expiration_month }}", label: "card ending {{ data.number | last4 }}", fixed: 7 };

  it("a mask may be a JSON template whose string leaves are expressions; numbers keep their type", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, readingWith("mask"));
    const token = await createToken(masking.key, { type: "card", data: CARD, mask: MASK });
    expect(token.mask).toEqual(MASK);
    expect(token.data).toEqual({ last: "4242", month: 11, label: "card ending 4242", fixed: 7 });
  });

  it("reveal shows the data, mask the template, redact nothing", async () => {
    const tenant = await seedTokenTenant();
    const owner = await createApplication(tenant, readingWith("reveal"));
    const token = await createToken(owner.key, { type: "card", data: CARD, mask: MASK });
    const read = async (transform: "reveal" | "mask" | "redact") => {
      const app = await createApplication(tenant, readingWith(transform));
      return (await call("GET", `/tokens/${token.id}`, { key: app.key })).body;
    };
    expect((await read("reveal")).data).toEqual(CARD);
    expect((await read("mask")).data).toEqual({ last: "4242", month: 11, label: "card ending 4242", fixed: 7 });
    expect(await read("redact")).not.toHaveProperty("data");
  });

  it("works for string types too, and detokenization under a masking use rule gets the template", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, readingWith("mask"));
    const token = await createToken(masking.key, { type: "social_security_number", data: "123-45-6789", mask: { last4: "{{ data | last4 }}" } });
    expect(token.data).toEqual({ last4: "6789" });
    const used = await call("POST", "/detokenize", { key: masking.key, body: { ssn: `{{ ${token.id} }}` } });
    expect(used.body).toEqual({ ssn: { last4: "6789" } });
  });

  it("a leaf that is not a valid expression is a 400 at its path", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokens", {
      key,
      body: { type: "card", data: CARD, mask: { number: "{{ data.number | no_such_filter }}", nested: { bad: "{{ data.number | json: '$..*' }}" } } },
    });
    const errors = expectProblem(reply, 400).errors!;
    expect(Object.keys(errors)).toContain("mask.number");
    expect(JSON.stringify(errors)).not.toContain(CARD.number);
  });

  it("a mask that is neither an expression nor an object is a 400", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokens", { key, body: { type: "card", data: CARD, mask: ["{{ data.number }}"] } });
    expect(expectProblem(reply, 400).errors).toHaveProperty("mask");
  });
});

describe("card security codes are dropped after the retention window (PCI DSS 3.3.1)", () => {
  it("the cron rewrites the ciphertext without the cvc once the window has passed", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card", data: CARD });
    const before = (await storedRow(tenant.tenantId, token.id))!;
    expect(before.cvc_expires_at).toBeGreaterThan(Date.now() + RETENTION_MS - 60_000);

    await runCronAt(Date.now());
    expect((await storedRow(tenant.tenantId, token.id))!.ciphertext).toBe(before.ciphertext);

    await runCronAt(Date.now() + RETENTION_MS + 1000);
    const after = (await storedRow(tenant.tenantId, token.id))!;
    expect(after.ciphertext).not.toBe(before.ciphertext);
    expect(after.cvc_expires_at).toBeNull();
    const { cvc: _cvc, ...withoutCvc } = CARD;
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).body.data).toEqual(withoutCvc);
  });

  it("reads and detokenization leave the cvc out once the window has passed, before the cron runs", async () => {
    const tenant = await seedTokenTenant();
    const created = await callConfigured({ CARD_CVC_RETENTION_S: "0" }, "POST", "/tokens", {
      headers: { "SVC-API-KEY": tenant.key },
      body: { type: "card", data: CARD },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = (created.body as { id: string }).id;
    const { cvc: _cvc, ...withoutCvc } = CARD;
    expect((await call("GET", `/tokens/${id}`, { key: tenant.key })).body.data).toEqual(withoutCvc);
    const used = await call("POST", "/detokenize", { key: tenant.key, body: { card: `{{ ${id} }}`, cvc: `{{ ${id} | json: '$.cvc' }}` } });
    expect(used.body).toEqual({ card: withoutCvc, cvc: "" });
  });

  it("a patch that leaves the data alone keeps the window; new data with a cvc starts a new one", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card", data: CARD });
    const deadline = (await storedRow(tenant.tenantId, token.id))!.cvc_expires_at!;
    const patch = (body: unknown) =>
      call("PATCH", `/tokens/${token.id}`, { key: tenant.key, body, contentType: "application/merge-patch+json" });
    expect((await patch({ metadata: { a: "b" } })).status).toBe(200);
    expect((await storedRow(tenant.tenantId, token.id))!.cvc_expires_at).toBe(deadline);
    // New data restarts the window: with a two-hour retention it ends an hour after the first one.
    const renewed = await callConfigured({ CARD_CVC_RETENTION_S: "7200" }, "PATCH", `/tokens/${token.id}`, {
      headers: { "SVC-API-KEY": tenant.key, "content-type": "application/merge-patch+json" },
      body: { data: { cvc: "456" } },
    });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect((await storedRow(tenant.tenantId, token.id))!.cvc_expires_at).toBeGreaterThanOrEqual(deadline + RETENTION_MS);
    expect((await patch({ data: { cvc: null } })).status).toBe(200);
    expect((await storedRow(tenant.tenantId, token.id))!.cvc_expires_at).toBeNull();
  });

  it("only cards carry a window", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: { cvc: "123" } });
    expect((await storedRow(tenant.tenantId, token.id))!.cvc_expires_at).toBeNull();
  });
});
