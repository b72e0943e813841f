import { describe, expect, it } from "vitest";
import { OFFICIAL_FORMULAS } from "../../src/reactors/official";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { createFormula, createReactor, officialFormula, react } from "../support/reactors";
import { createToken, REVEAL_EVERYTHING, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

const cardDetails = officialFormula("Card brand and BIN details");
const retokenize = officialFormula("Re-tokenize into a container");
const bankAccount = officialFormula("US bank account validation");

async function detailsOf(tenant: TokenTenant, cardNumber: string) {
  const reactor = await createReactor(tenant, cardDetails.id);
  const card = await createToken(tenant.key, { type: "card_number", data: cardNumber });
  const reply = await react(tenant.key, reactor.id, { card_number: `{{ ${card.id} }}` });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

describe("official formulas", () => {
  it("every official formula's code passes the sandbox's check when saved", async () => {
    const tenant = await seedTenant();
    for (const official of OFFICIAL_FORMULAS) await createFormula(tenant, { name: official.name, code: official.code });
  });

  it("are the same for every tenant", async () => {
    const [first, second] = [await seedTenant(), await seedTenant()];
    const read = async (key: string) => (await call("GET", `/reactor-formulas/${retokenize.id}`, { key })).body;
    expect(await read(first.managementKey)).toEqual(await read(second.managementKey));
  });
});

describe("official formula: card brand and BIN details", () => {
  it("gives the brand, BIN, last four and checks of a card_number token, never the number", async () => {
    const tenant = await seedTokenTenant();
    const result = await detailsOf(tenant, VISA);
    expect(result).toEqual({
      tokens: null,
      raw: { brand: "visa", bin: "42424242", iin: "424242", last4: "4242", length: 16, length_valid: true, luhn_valid: true, valid: true },
    });
  });

  it("recognises the major brands by their issuer ranges", async () => {
    const tenant = await seedTokenTenant();
    const brands: [string, string, string][] = [
      ["378282246310005", "american_express", "378282"],
      ["5555555555554444", "mastercard", "55555555"],
      ["2223003122003222", "mastercard", "22230031"],
      ["6011111111111117", "discover", "60111111"],
      ["3566002020360505", "jcb", "35660020"],
      ["36227206271667", "diners_club", "362272"],
      ["6200000000000005", "unionpay", "62000000"],
    ];
    for (const [number, brand, bin] of brands) {
      const { raw } = await detailsOf(tenant, number);
      expect(raw, number).toMatchObject({ brand, bin, last4: number.slice(-4), valid: true });
    }
  });

  it("reports an unknown brand and a failing Luhn check instead of guessing", async () => {
    const { caller, reactor } = await officialReactor(cardDetails.id);
    const reply = await react(caller.key, reactor.id, { card_number: "9999 9999 9999 9999" });
    expect(reply.body.raw).toMatchObject({ brand: "unknown", length_valid: false, luhn_valid: false, valid: false });
  });

  it("refuses a value that is not a card number with a 400", async () => {
    const { caller, reactor } = await officialReactor(cardDetails.id);
    const problem = expectProblem(await react(caller.key, reactor.id, { card_number: "not a card" }), 400);
    expect(problem.errors?.error?.[0]).toContain("12 to 19 digits");
    expect(Object.keys(expectProblem(await react(caller.key, reactor.id, {}), 400).errors!)).toEqual(["args.card_number"]);
  });
});

describe("official formula: re-tokenize into a container", () => {
  it("copies a token's data into a new token in the reactor's container, with the given type and metadata", async () => {
    const tenant = await seedTokenTenant();
    const source = await createToken(tenant.key, { type: "card_number", data: VISA });
    const application = await createApplication(tenant, REVEAL_EVERYTHING);
    const reactor = await createReactor(tenant, retokenize.id, {
      configuration: { container: "/partners/acme/" },
      applicationId: application.id,
    });
    const reply = await react(tenant.key, reactor.id, {
      data: `{{ ${source.id} }}`,
      type: "card_number",
      metadata: { source: source.id },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.raw).toEqual({ container: "/partners/acme/" });
    const copy = await call("GET", `/tokens/${reply.body.tokens.token.id}`, { key: tenant.key });
    expect(copy.body).toMatchObject({
      type: "card_number",
      data: VISA,
      containers: ["/partners/acme/"],
      metadata: { source: source.id },
      created_by: application.id,
    });
    expect(copy.body.id).not.toBe(source.id);
  });

  it("makes a generic token when no type is given", async () => {
    const tenant = await seedTokenTenant();
    const application = await createApplication(tenant, REVEAL_EVERYTHING);
    const reactor = await createReactor(tenant, retokenize.id, { configuration: { container: "/copies/" }, applicationId: application.id });
    const reply = await react(tenant.key, reactor.id, { data: "secret note" });
    expect(reply.body.tokens.token).toMatchObject({ type: "token", containers: ["/copies/"] });
  });

  it("needs token:create on the target container for the reactor's application (403)", async () => {
    const tenant = await seedTokenTenant();
    const application = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/elsewhere/", transform: "mask", permissions: ["token:create"] }],
    });
    const reactor = await createReactor(tenant, retokenize.id, { configuration: { container: "/copies/" }, applicationId: application.id });
    expectProblem(await react(tenant.key, reactor.id, { data: "x" }), 403);
  });

  it("refuses metadata that is not an object with a 400", async () => {
    const tenant = await seedTokenTenant();
    const application = await createApplication(tenant, REVEAL_EVERYTHING);
    const reactor = await createReactor(tenant, retokenize.id, { configuration: { container: "/copies/" }, applicationId: application.id });
    expect(expectProblem(await react(tenant.key, reactor.id, { data: "x", metadata: "label" }), 400).errors?.error?.[0]).toContain(
      "metadata",
    );
  });

  it("needs the container in the reactor's configuration", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/reactors", { key: tenant.managementKey, body: { name: "copy", formula: { id: retokenize.id } } });
    expect(Object.keys(expectProblem(reply, 400).errors!)).toEqual(["configuration.container"]);
  });
});

describe("official formula: US bank account validation", () => {
  it("normalises a valid pair and returns the routing number and the account's last four", async () => {
    const { caller, reactor } = await officialReactor(bankAccount.id, { tokenize: false });
    const reply = await react(caller.key, reactor.id, { routing_number: "0210-0002-1", account_number: "0001 2345 6789" });
    expect(reply.body).toEqual({
      tokens: null,
      raw: { valid: true, routing_number: "021000021", account_number_last4: "6789", problems: {} },
    });
  });

  it("reports a routing number that fails the ABA checksum", async () => {
    const { caller, reactor } = await officialReactor(bankAccount.id, { tokenize: false });
    const reply = await react(caller.key, reactor.id, { routing_number: "021000022", account_number: "123456789" });
    expect(reply.body.raw).toEqual({
      valid: false,
      routing_number: null,
      account_number_last4: "6789",
      problems: { routing_number: "fails the ABA checksum" },
    });
  });

  it("reports a routing number outside the Federal Reserve ranges and an account number of the wrong length", async () => {
    const { caller, reactor } = await officialReactor(bankAccount.id, { tokenize: false });
    const reply = await react(caller.key, reactor.id, { routing_number: "500000005", account_number: "12" });
    expect(reply.body.raw.problems).toEqual({
      routing_number: "does not start with a Federal Reserve routing symbol",
      account_number: "must be 3 to 17 digits",
    });
  });

  it("with tokenize = true stores a valid pair as bank tokens, read back from detokenized args", async () => {
    const tenant = await seedTokenTenant();
    const account = await createToken(tenant.key, { type: "us_bank_account_number", data: "000123456789" });
    const application = await createApplication(tenant, REVEAL_EVERYTHING);
    const reactor = await createReactor(tenant, bankAccount.id, { configuration: { tokenize: true }, applicationId: application.id });
    const reply = await react(tenant.key, reactor.id, { routing_number: "021000021", account_number: `{{ ${account.id} }}` });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.tokens.routing_number).toMatchObject({ type: "us_bank_routing_number" });
    expect(reply.body.tokens.account_number).toMatchObject({ type: "us_bank_account_number" });
    const stored = await call("GET", `/tokens/${reply.body.tokens.account_number.id}`, { key: tenant.key });
    expect(stored.body.data).toBe("000123456789");
  });

  it("with tokenize = true stores nothing for an invalid pair", async () => {
    const tenant = await seedTokenTenant();
    const application = await createApplication(tenant, REVEAL_EVERYTHING);
    const reactor = await createReactor(tenant, bankAccount.id, { configuration: { tokenize: true }, applicationId: application.id });
    const reply = await react(tenant.key, reactor.id, { routing_number: "021000022", account_number: "123456789" });
    expect(reply.body).toMatchObject({ tokens: null, raw: { valid: false } });
  });
});

describe("official formula: card account updater (coming soon)", () => {
  it("is listed as coming_soon and cannot be used by a reactor", async () => {
    const tenant = await seedTenant();
    const updater = officialFormula("Card account updater");
    expect((await call("GET", `/reactor-formulas/${updater.id}`, { key: tenant.managementKey })).body.status).toBe("coming_soon");
    const reply = await call("POST", "/reactors", { key: tenant.managementKey, body: { name: "updater", formula: { id: updater.id } } });
    expect(Object.keys(expectProblem(reply, 400).errors!)).toEqual(["formula.id"]);
  });
});

/** A tenant with a reactor of an official formula and a caller holding token:use. */
async function officialReactor(formulaId: string, configuration: Record<string, unknown> = {}) {
  const tenant = await seedTenant();
  const reactor = await createReactor(tenant, formulaId, { configuration });
  const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
  return { tenant, reactor, caller };
}
