import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createToken, expireToken, SSN, seedTokenTenant, VISA } from "../support/tokens";

describe("fingerprints", () => {
  it("equal data gives equal fingerprints within a tenant and type", async () => {
    const { key } = await seedTokenTenant();
    const a = await createToken(key, { type: "card_number", data: VISA });
    const b = await createToken(key, { type: "card_number", data: VISA });
    const other = await createToken(key, { type: "card_number", data: "4000056655665556" });
    expect(a.id).not.toBe(b.id);
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(other.fingerprint).not.toBe(a.fingerprint);
  });

  it("the default social security number fingerprint ignores dashes", async () => {
    const { key } = await seedTokenTenant();
    const dashed = await createToken(key, { type: "social_security_number", data: SSN });
    const plain = await createToken(key, { type: "social_security_number", data: "123456789" });
    expect(dashed.fingerprint).toBe(plain.fingerprint);
  });

  it("a token's default fingerprint does not depend on the order of object keys", async () => {
    const { key } = await seedTokenTenant();
    const a = await createToken(key, { type: "token", data: { name: "Ada", born: 1815 } });
    const b = await createToken(key, { type: "token", data: { born: 1815, name: "Ada" } });
    expect(a.fingerprint).toBe(b.fingerprint);
  });

  it("equal data gives different fingerprints in different tenants", async () => {
    const first = await seedTokenTenant();
    const second = await seedTokenTenant();
    const a = await createToken(first.key, { type: "card_number", data: VISA });
    const b = await createToken(second.key, { type: "card_number", data: VISA });
    expect(a.fingerprint).not.toBe(b.fingerprint);
  });

  it("the fingerprint is a keyed HMAC, not the data", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card_number", data: VISA });
    expect(token.fingerprint).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(token.fingerprint).not.toContain("4242");
  });

  it("a custom fingerprint expression decides what counts as equal", async () => {
    const { key } = await seedTokenTenant();
    const expression = "{{ data | json: '$.number' }}";
    const a = await createToken(key, { type: "token", data: { number: "1", note: "a" }, fingerprint_expression: expression });
    const b = await createToken(key, { type: "token", data: { number: "1", note: "b" }, fingerprint_expression: expression });
    expect(a.fingerprint).toBe(b.fingerprint);
  });

  it("a fingerprint expression that evaluates to an empty value is a 400", async () => {
    const { key } = await seedTokenTenant();
    const problem = expectProblem(
      await call("POST", "/tokens", { key, body: { type: "token", data: "x", fingerprint_expression: "{{ data.none }}" } }),
      400,
    );
    expect(problem.errors?.fingerprint_expression?.[0]).toContain("must not evaluate to an empty value");
  });
});

describe("deduplication", () => {
  it("with deduplicate_token, a create matching an existing token's type and fingerprint returns that token and stores nothing", async () => {
    const { key } = await seedTokenTenant();
    const original = await createToken(key, { type: "card_number", data: VISA });
    const before = await rowCounts();
    const reply = await call("POST", "/tokens", { key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: original.id, data: VISA, _extras: { deduplicated: true } });
    expect(await rowCounts()).toEqual(before);
  });

  it("answers whether it deduplicated in _extras, as the current interface does, and nowhere else", async () => {
    const { key } = await seedTokenTenant();
    const created = await call("POST", "/tokens", { key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    const again = await call("POST", "/tokens", { key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    const tokenized = await call("POST", "/tokenize", { key, body: [{ type: "card_number", data: VISA, deduplicate_token: true }] });
    expect([created.status, again.status]).toEqual([201, 200]);
    expect([created.body._extras, again.body._extras, tokenized.body[0]._extras]).toEqual([
      { deduplicated: false },
      { deduplicated: true },
      { deduplicated: true },
    ]);
    for (const token of [created.body, again.body, tokenized.body[0]]) expect(token).not.toHaveProperty("deduplicated");
  });

  it("without deduplicate_token, equal data creates another token", async () => {
    const { key } = await seedTokenTenant();
    const original = await createToken(key, { type: "card_number", data: VISA });
    const again = await createToken(key, { type: "card_number", data: VISA, deduplicate_token: false });
    expect(again.id).not.toBe(original.id);
    expect(again._extras.deduplicated).toBe(false);
  });

  it("fingerprints are per type: the same content of another type has another fingerprint and is not a duplicate", async () => {
    const { key } = await seedTokenTenant();
    const account = await createToken(key, { type: "us_bank_account_number", data: "011000015" });
    const routing = await createToken(key, { type: "us_bank_routing_number", data: "011000015", deduplicate_token: true });
    expect(routing.fingerprint).not.toBe(account.fingerprint);
    expect(routing.id).not.toBe(account.id);
    expect(routing._extras.deduplicated).toBe(false);
    const ssn = await createToken(key, { type: "social_security_number", data: "123-45-6789" });
    const ein = await createToken(key, { type: "employer_id_number", data: "123456789" });
    expect(ein.fingerprint).not.toBe(ssn.fingerprint);
    const sameSsn = await createToken(key, { type: "social_security_number", data: "123456789" });
    expect(sameSsn.fingerprint).toBe(ssn.fingerprint);
  });

  it("another tenant's token is never a duplicate", async () => {
    const first = await seedTokenTenant();
    const second = await seedTokenTenant();
    const a = await createToken(first.key, { type: "card_number", data: VISA });
    const b = await createToken(second.key, { type: "card_number", data: VISA, deduplicate_token: true });
    expect(b.id).not.toBe(a.id);
  });

  it("an expired token is never a duplicate", async () => {
    const { key } = await seedTokenTenant();
    const original = await createToken(key, { type: "card_number", data: VISA, expires_at: "2099-01-01T00:00:00Z" });
    await expireToken(original.id);
    const again = await createToken(key, { type: "card_number", data: VISA, deduplicate_token: true });
    expect(again.id).not.toBe(original.id);
  });

  it("a token in containers the caller may not create in is not offered as a duplicate", async () => {
    const tenant = await seedTokenTenant();
    const hidden = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/pci/restricted/"] });
    const limited = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/pci/high/", transform: "mask", permissions: ["token:create"] }],
    });
    const reply = await call("POST", "/tokens", { key: limited.key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    expect(reply.status).toBe(201);
    expect(reply.body.id).not.toBe(hidden.id);
  });

  it("the returned duplicate shows data per the stricter of the caller's create and read transforms", async () => {
    const tenant = await seedTokenTenant();
    const original = await createToken(tenant.key, { type: "card_number", data: VISA });
    const masking = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const reply = await call("POST", "/tokens", { key: masking.key, body: { type: "card_number", data: VISA, deduplicate_token: true } });
    expect(reply.body).toMatchObject({ id: original.id, data: "XXXXXXXXXXXX4242", _extras: { deduplicated: true } });
    // Without token:read the existing token's data is redacted: only its fingerprint matched.
    const creating = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const redacted = await call("POST", "/tokens", {
      key: creating.key,
      body: { type: "card_number", data: VISA, deduplicate_token: true },
    });
    expect(redacted.body).toMatchObject({ id: original.id, _extras: { deduplicated: true } });
    expect(redacted.body.data).toBeUndefined();
  });

  it("within one tokenize request, a later duplicate reuses the token created by an earlier entry", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokenize", {
      key,
      body: [
        { type: "card_number", data: VISA },
        { type: "card_number", data: VISA, deduplicate_token: true },
      ],
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expect(reply.body[1].id).toBe(reply.body[0].id);
    expect(reply.body[1]._extras.deduplicated).toBe(true);
  });
});
