import { describe, expect, it } from "vitest";
import { keysOfTenant } from "../support/context";
import { call, createApplication, expectProblem } from "../support/harness";
import { createToken, seedTokenTenant } from "../support/tokens";

const BANK = { routing_number: "011000015", account_number: "000123456789" };

/** A POST /tokens of a bank account that must be refused with a 400; returns its field errors. */
async function refusedBank(data: unknown): Promise<Record<string, string[]>> {
  const { key } = await seedTokenTenant();
  const reply = await call("POST", "/tokens", { key, body: { type: "bank", data } });
  const problem = expectProblem(reply, 400);
  expect(problem.detail).toMatch(/^Invalid body: data/);
  return problem.errors!;
}

describe("bank tokens", () => {
  it("go to /bank/high/, fingerprinted by account and routing number, masked to the account's last four", async () => {
    const tenant = await seedTokenTenant();
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const reply = await call("POST", "/tokens", { key: plain.key, body: { type: "bank", data: BANK } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const keys = await keysOfTenant(tenant.tenantId);
    expect(reply.body).toMatchObject({
      type: "bank",
      containers: ["/bank/high/"],
      fingerprint_expression: "{{ data.account_number }}|{{ data.routing_number }}",
      fingerprint: await keys.fingerprint("bank", "000123456789|011000015"),
      mask: { routing_number: "{{ data.routing_number }}", account_number: "{{ data.account_number | reveal_last: 4 }}" },
      search_indexes: [],
    });
    const masked = { routing_number: "011000015", account_number: "XXXXXXXX6789" };
    expect(reply.body.data).toEqual(masked);
    expect((await call("GET", `/tokens/${reply.body.id}`, { key: plain.key })).body.data).toEqual(masked);
  });

  it("reveal the whole account", async () => {
    const { key } = await seedTokenTenant();
    expect((await createToken(key, { type: "bank", data: BANK })).data).toEqual(BANK);
  });

  it("accept account numbers of 3 to 17 digits", async () => {
    const { key } = await seedTokenTenant();
    for (const account_number of ["123", "12345678901234567"]) {
      expect((await createToken(key, { type: "bank", data: { ...BANK, account_number } })).data.account_number).toBe(account_number);
    }
  });

  it("must be an object", async () => {
    expect(await refusedBank("011000015")).toEqual({ data: ["must be an object for type bank"] });
  });

  it("a missing required member is a 400 at its path", async () => {
    expect(await refusedBank({})).toEqual({
      "data.routing_number": ["is required for type bank"],
      "data.account_number": ["is required for type bank"],
    });
  });

  it("a member of the wrong JSON type is a 400 at its path: both numbers are strings", async () => {
    expect(await refusedBank({ routing_number: 11000015, account_number: 123456789 })).toEqual({
      "data.routing_number": ["must be a string of 9 digits for type bank"],
      "data.account_number": ["must be a string of 3 to 17 digits for type bank"],
    });
  });

  it("an unknown member is a 400 at its path", async () => {
    expect(await refusedBank({ ...BANK, account_owner: "Jane Doe" })).toEqual({
      "data.account_owner": ["is not a member of this type for type bank"],
    });
  });

  it("a routing number must pass the ABA checksum and an account have 3 to 17 digits; no error repeats a value", async () => {
    const errors = await refusedBank({ routing_number: "011000016", account_number: "12" });
    expect(errors).toEqual({
      "data.routing_number": ["must pass the ABA routing number checksum for type bank"],
      "data.account_number": ["must be a string of 3 to 17 digits for type bank"],
    });
    expect(JSON.stringify(errors)).not.toMatch(/011000016|"12"/);
    expect(await refusedBank({ ...BANK, account_number: "123456789012345678" })).toEqual({
      "data.account_number": ["must be a string of 3 to 17 digits for type bank"],
    });
    expect(await refusedBank({ ...BANK, routing_number: "01100001A" })).toEqual({
      "data.routing_number": ["must be a string of 9 digits for type bank"],
    });
  });

  it("the same account at another bank is another fingerprint; the same account at the same bank deduplicates", async () => {
    const { key } = await seedTokenTenant();
    const first = await createToken(key, { type: "bank", data: BANK });
    const other = await createToken(key, { type: "bank", data: { ...BANK, routing_number: "021000021" }, deduplicate_token: true });
    expect(other.fingerprint).not.toBe(first.fingerprint);
    expect(other.id).not.toBe(first.id);
    const again = await call("POST", "/tokens", { key, body: { type: "bank", data: { ...BANK }, deduplicate_token: true } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.id, _extras: { deduplicated: true } });
  });

  it("are found by type:bank", async () => {
    const { key } = await seedTokenTenant();
    const bank = await createToken(key, { type: "bank", data: BANK });
    await createToken(key, { type: "us_bank_account_number", data: BANK.account_number });
    const found = await call("POST", "/tokens/search", { key, body: { query: "type:bank" } });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.map((token: { id: string }) => token.id)).toEqual([bank.id]);
  });
});
