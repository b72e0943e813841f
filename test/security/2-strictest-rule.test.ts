import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication, expectProblem } from "../support/harness";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, patchToken, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/**
 * Rule 2: a token in several containers is presented under the strictest of the caller's rules for
 * them (redact over mask over reveal), on every path that presents a token. A container where the
 * caller holds no rule for the permission counts as redact.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099 };
const EVERY = ["token:create", "token:read", "token:update", "token:search", "token:use"];

/** Reveal on /public/, mask on /pci/: the attacker. */
const SPLIT_RULES = [
  { priority: 1, container: "/public/", transform: "reveal" as const, permissions: EVERY },
  { priority: 2, container: "/pci/", transform: "mask" as const, permissions: EVERY },
];

describe("rule 2: reads take the strictest rule of the token's containers", () => {
  let tenant: TokenTenant;
  let attacker: { id: string; key: string };
  let card: { id: string };
  let moved: Awaited<ReturnType<typeof patchToken>>;

  beforeAll(async () => {
    tenant = await seedTokenTenant();
    attacker = await createApplication(tenant, { type: "private", rules: SPLIT_RULES });
    card = await createToken(tenant.key, { type: "card", data: CARD, metadata: { marker: "strictest" } });
    // Adding /public/ is allowed (token:create there); it must not reveal anything.
    moved = await patchToken(attacker.key, card.id, { containers: ["/pci/high/", "/public/"] });
  });

  it("the PATCH answer masks", () => {
    expect(moved.status, moved.text).toBe(200);
    expect(moved.text).not.toContain(VISA);
  });

  it("GET /tokens/{id} masks", async () => {
    const read = await call("GET", `/tokens/${card.id}`, { key: attacker.key });
    expect(read.status).toBe(200);
    expect(read.body.data.number).toBe(`XXXXXXXXXXXX${VISA.slice(-4)}`);
  });

  it("GET /tokens masks", async () => {
    const list = await call("GET", `/tokens?id=${card.id}`, { key: attacker.key });
    expect(list.body.data).toHaveLength(1);
    expect(list.text).not.toContain(VISA);
  });

  it("search masks", async () => {
    const found = await call("POST", "/tokens/search", { key: attacker.key, body: { query: "metadata.marker:strictest" } });
    expect(found.body.data).toHaveLength(1);
    expect(found.text).not.toContain(VISA);
  });

  it("create and tokenize answers mask for tokens put in both containers", async () => {
    const created = await call("POST", "/tokens", {
      key: attacker.key,
      body: { type: "card", data: CARD, containers: ["/public/", "/pci/high/"] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.text).not.toContain(VISA);
    const tokenized = await call("POST", "/tokenize", {
      key: attacker.key,
      body: { card: { type: "card", data: CARD, containers: ["/public/", "/pci/high/"] } },
    });
    expect(tokenized.status, tokenized.text).toBe(201);
    expect(tokenized.text).not.toContain(VISA);
  });

  it("a deduplicated create answers the existing token under the strictest rule", async () => {
    const again = await call("POST", "/tokens", {
      key: attacker.key,
      body: { type: "card", data: { ...CARD, expiration_month: 1 }, containers: ["/public/"], deduplicate_token: true },
    });
    expect(again.status, again.text).toBeLessThan(300);
    expect(again.text).not.toContain(VISA);
  });

  it("bt reads in tenant code mask", async () => {
    const formula = await createFormula(tenant, {
      code: `module.exports = async (req) => ({ raw: {
        read: await req.bt.tokens.retrieve(req.args.id),
        found: await req.bt.tokens.search({ query: "metadata.marker:strictest" }),
      } });`,
      request_parameters: [{ name: "id", type: "string", optional: false }],
    });
    const reactor = await createReactor(tenant, formula.id, { applicationId: attacker.id });
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const reply = await react(caller.key, reactor.id, { id: card.id });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.text).not.toContain(VISA);
  });

  it("a container without any rule for the permission redacts", async () => {
    const partial = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/public/", transform: "reveal", permissions: ["token:read"] }],
    });
    const read = await call("GET", `/tokens/${card.id}`, { key: partial.key });
    expect(read.status).toBe(200);
    expect(read.body.data).toBeUndefined();
  });

  it("putting a token into a container needs token:create there", async () => {
    const updater = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:read", "token:update"] }],
    });
    const reply = await patchToken(updater.key, card.id, { containers: ["/pci/high/", "/public/", "/elsewhere/"] });
    expect(expectProblem(reply, 403).detail).toContain("token:create");
  });
});
