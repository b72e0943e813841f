import { describe, expect, it } from "vitest";
import { keysOfTenant } from "../support/context";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant } from "../support/tokens";

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };
const { cvc: _cvc, ...CARD_WITHOUT_CVC } = CARD;

/** A POST /tokens of a card that must be refused with a 400; returns its field errors. */
async function refusedCard(data: unknown): Promise<Record<string, string[]>> {
  const { key } = await seedTokenTenant();
  const reply = await call("POST", "/tokens", { key, body: { type: "card", data } });
  const problem = expectProblem(reply, 400);
  expect(problem.detail).toMatch(/^Invalid body: data/);
  return problem.errors!;
}

describe("card tokens", () => {
  it("go to /pci/high/, fingerprinted by their number, masked to the number's last four and the expiry, never the cvc", async () => {
    const tenant = await seedTokenTenant();
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const reply = await call("POST", "/tokens", { key: plain.key, body: { type: "card", data: CARD } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const keys = await keysOfTenant(tenant.tenantId);
    expect(reply.body).toMatchObject({
      type: "card",
      containers: ["/pci/high/"],
      fingerprint_expression: "{{ data.number }}",
      fingerprint: await keys.fingerprint("card", CARD.number),
      mask: {
        number: "{{ data.number | reveal_last: 4 }}",
        expiration_month: "{{ data.expiration_month }}",
        expiration_year: "{{ data.expiration_year }}",
      },
      search_indexes: [],
    });
    const masked = { number: "XXXXXXXXXXXX4242", expiration_month: 11, expiration_year: 2030 };
    expect(reply.body.data).toEqual(masked);
    expect((await call("GET", `/tokens/${reply.body.id}`, { key: plain.key })).body.data).toEqual(masked);
  });

  it("reveal the whole card, cvc included, within the cvc's retention window", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card", data: CARD });
    expect(token.data).toEqual(CARD);
    expect((await call("GET", `/tokens/${token.id}`, { key })).body.data).toEqual(CARD);
  });

  it("need no cvc", async () => {
    const { key } = await seedTokenTenant();
    expect((await createToken(key, { type: "card", data: CARD_WITHOUT_CVC })).data).toEqual(CARD_WITHOUT_CVC);
  });

  it("accept 13 to 19 digits and cvcs of 3 or 4 digits", async () => {
    const { key } = await seedTokenTenant();
    for (const number of ["4222222222222", "6011000990139424", "6250941006528599", "3530111333300000", "6011111111111111110"]) {
      expect((await createToken(key, { type: "card", data: { ...CARD, number, cvc: "1234" } })).data.number).toBe(number);
    }
  });

  it("must be an object", async () => {
    expect(await refusedCard(CARD.number)).toEqual({ data: ["must be an object for type card"] });
    expect(await refusedCard([CARD])).toEqual({ data: ["must be an object for type card"] });
  });

  it("a missing number is a 400 at its path", async () => {
    expect(await refusedCard({ cvc: "123" })).toEqual({ "data.number": ["is required for type card"] });
  });

  it("need no expiry, as the current docs say: a card of a number alone is stored, and masked to its last four and no expiry", async () => {
    const tenant = await seedTokenTenant();
    const revealed = await createToken(tenant.key, { type: "card", data: { number: CARD.number } });
    expect(revealed.data).toEqual({ number: CARD.number });
    const { cvc: _, expiration_month: _month, expiration_year: _year, ...numberOnly } = CARD;
    expect((await createToken(tenant.key, { type: "card", data: { ...numberOnly, cvc: "123" } })).data).toEqual({
      ...numberOnly,
      cvc: "123",
    });
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect((await call("GET", `/tokens/${revealed.id}`, { key: plain.key })).body.data).toEqual({
      number: "XXXXXXXXXXXX4242",
      expiration_month: null,
      expiration_year: null,
    });
  });

  it("take an expiry whole: a month without a year, or a year without a month, is a 400 naming the one missing", async () => {
    expect(await refusedCard({ ...CARD, expiration_year: null })).toEqual({
      "data.expiration_year": ["is required with expiration_month for type card"],
    });
    const { expiration_month: _, ...withoutMonth } = CARD;
    expect(await refusedCard(withoutMonth)).toEqual({ "data.expiration_month": ["is required with expiration_year for type card"] });
  });

  it("a patch may remove the expiry whole, never half of it", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card", data: CARD });
    const half = await call("PATCH", `/tokens/${token.id}`, {
      key,
      body: { data: { expiration_month: null } },
      contentType: "application/merge-patch+json",
    });
    expect(expectProblem(half, 400).errors).toEqual({ "data.expiration_month": ["is required with expiration_year for type card"] });
    const whole = await call("PATCH", `/tokens/${token.id}`, {
      key,
      body: { data: { expiration_month: null, expiration_year: null } },
      contentType: "application/merge-patch+json",
    });
    expect(whole.status, JSON.stringify(whole.body)).toBe(200);
    expect(whole.body.data).toEqual({ number: CARD.number, cvc: CARD.cvc });
  });

  it("card_exp on a card without an expiry is a 400 naming the expression, never a value", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card", data: { number: CARD.number } });
    const problem = expectProblem(
      await call("POST", "/detokenize", { key, body: { expiry: `{{ ${token.id} | card_exp: 'MM/YY' }}` } }),
      400,
    );
    expect(problem.errors?.expiry?.[0]).toContain("card_exp needs a card whose expiration_month is a whole number");
    expect(JSON.stringify(problem)).not.toContain(CARD.number);
  });

  it("a member of the wrong JSON type is a 400 at its path: the number and cvc are strings, the month and year integers", async () => {
    expect(await refusedCard({ number: 4242424242424242, expiration_month: "11", expiration_year: "2030", cvc: 123 })).toEqual({
      "data.number": ["must be a string of 13 to 19 digits for type card"],
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
      "data.expiration_year": ["must be a four-digit integer for type card"],
      "data.cvc": ["must be a string of 3 or 4 digits for type card"],
    });
  });

  it("an unknown member is a 400 at its path", async () => {
    expect(await refusedCard({ ...CARD, name: "Jane Doe" })).toEqual({ "data.name": ["is not a member of this type for type card"] });
  });

  it("values out of range are refused member by member, and no error repeats a value", async () => {
    const errors = await refusedCard({ number: "4242424242424241", expiration_month: 13, expiration_year: 30, cvc: "12" });
    expect(errors).toEqual({
      "data.number": ["must pass the Luhn check for type card"],
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
      "data.expiration_year": ["must be a four-digit integer for type card"],
      "data.cvc": ["must be a string of 3 or 4 digits for type card"],
    });
    expect(await refusedCard({ ...CARD, number: "424242424242" })).toEqual({
      "data.number": ["must be a string of 13 to 19 digits for type card"],
    });
    expect(await refusedCard({ ...CARD, expiration_month: 0 })).toEqual({
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
    });
    expect(await refusedCard({ ...CARD, expiration_month: 1.5 })).toEqual({
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
    });
    expect(await refusedCard({ ...CARD, cvc: "12345" })).toEqual({ "data.cvc": ["must be a string of 3 or 4 digits for type card"] });
    expect(JSON.stringify(errors)).not.toMatch(/4242424242424241|"12"|\b13\b|\b30\b/);
  });

  it("deduplicate on the number: the same card with another cvc is the same token", async () => {
    const { key } = await seedTokenTenant();
    const first = await createToken(key, { type: "card", data: CARD });
    const again = await call("POST", "/tokens", { key, body: { type: "card", data: { ...CARD, cvc: "999" }, deduplicate_token: true } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.id, _extras: { deduplicated: true }, fingerprint: first.fingerprint, data: CARD });
    const otherCard = await createToken(key, { type: "card", data: { ...CARD, number: "5555555555554444" }, deduplicate_token: true });
    expect(otherCard.id).not.toBe(first.id);
    expect(otherCard.fingerprint).not.toBe(first.fingerprint);
  });

  it("are not duplicates of a card_number token with the same digits", async () => {
    const { key } = await seedTokenTenant();
    const number = await createToken(key, { type: "card_number", data: CARD.number });
    const card = await createToken(key, { type: "card", data: CARD, deduplicate_token: true });
    expect(card).toMatchObject({ _extras: { deduplicated: false } });
    expect(card.id).not.toBe(number.id);
    expect(card.fingerprint).not.toBe(number.fingerprint);
  });

  it("are found by type:card", async () => {
    const { key } = await seedTokenTenant();
    const card = await createToken(key, { type: "card", data: CARD });
    await createToken(key, { type: "card_number", data: CARD.number });
    const found = await call("POST", "/tokens/search", { key, body: { query: "type:card" } });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.map((token: { id: string }) => token.id)).toEqual([card.id]);
  });

  it("have no search indexes by default, so data: does not find them", async () => {
    const { key } = await seedTokenTenant();
    const card = await createToken(key, { type: "card", data: CARD });
    expect(card.search_indexes).toEqual([]);
    const byData = await call("POST", "/tokens/search", { key, body: { query: `data:${CARD.number}` } });
    expect(byData.body.pagination.total_items).toBe(0);
  });

  it("take search_indexes, as the current docs say, which data: then finds", async () => {
    const { key } = await seedTokenTenant();
    const indexed = await call("POST", "/tokens", {
      key,
      body: { type: "card", data: CARD, search_indexes: ["{{ data.number }}", "{{ data.number | last4 }}"] },
    });
    expect(indexed.status, JSON.stringify(indexed.body)).toBe(201);
    expect(indexed.body.search_indexes).toEqual(["{{ data.number }}", "{{ data.number | last4 }}"]);
    await createToken(key, { type: "card", data: { ...CARD, number: "5555555555554444" } });
    for (const value of [CARD.number, "4242"]) {
      const found = await call("POST", "/tokens/search", { key, body: { query: `data:${value}` } });
      expect(found.body.data.map((token: { id: string }) => token.id)).toEqual([indexed.body.id]);
    }
  });

  it("are checked member by member on PATCH too", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "card", data: CARD });
    const reply = await call("PATCH", `/tokens/${token.id}`, {
      key,
      body: { data: { expiration_month: 13, colour: "red" } },
      contentType: "application/merge-patch+json",
    });
    expect(expectProblem(reply, 400).errors).toEqual({
      "data.expiration_month": ["must be an integer from 1 to 12 for type card"],
      "data.colour": ["is not a member of this type for type card"],
    });
    const patched = await call("PATCH", `/tokens/${token.id}`, {
      key,
      body: { data: { expiration_year: 2031, cvc: null } },
      contentType: "application/merge-patch+json",
    });
    expect(patched.body.data).toEqual({ ...CARD_WITHOUT_CVC, expiration_year: 2031 });
  });
});
