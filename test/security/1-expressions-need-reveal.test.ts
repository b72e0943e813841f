import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, patchToken, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/**
 * Rule 1: `mask`, `fingerprint_expression` and `search_indexes` are functions of the token's data.
 * A caller may change them only in the request that replaces the data, or when its transform is
 * reveal on every container the token is in, before and after.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099, cvc: "123" };

/**
 * A tenant, a card in /pci/high/ (the type's default), and a key that may update it under the default
 * mask. A private one: a public key may not update a token it did not create at all (rule 8).
 */
async function cardAndMaskingKey() {
  const tenant = await seedTokenTenant();
  const card = await createToken(tenant.key, { type: "card", data: CARD });
  const updater = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:update"] });
  return { tenant, card, updater };
}

/** What a reader under the card's mask sees now: no member holds the whole number or the cvc. */
async function expectStillMasked(tenant: TokenTenant, id: string) {
  const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
  const read = await call("GET", `/tokens/${id}`, { key: reader.key });
  expect(read.status).toBe(200);
  expect(JSON.stringify(read.body)).not.toContain(VISA);
  expect(JSON.stringify(read.body.data)).not.toContain("123");
}

describe("rule 1: expressions over plaintext are defined only by callers who see the plaintext", () => {
  it("a key that updates under mask cannot turn a masked card into plaintext with mask {{ data }}: 403 naming mask, nothing changes", async () => {
    const { tenant, card, updater } = await cardAndMaskingKey();
    const before = await rowCounts();
    const problem = expectProblem(await patchToken(updater.key, card.id, { mask: "{{ data }}" }), 403);
    expect(problem.detail).toContain("mask");
    expect(problem.detail).not.toContain(VISA);
    expect(await rowCounts()).toEqual(before);
    await expectStillMasked(tenant, card.id);
  });

  it("nor with an object mask that copies the number and cvc", async () => {
    const { tenant, card, updater } = await cardAndMaskingKey();
    const reply = await patchToken(updater.key, card.id, { mask: { number: "{{ data.number }}", cvc: "{{ data.cvc }}" } });
    expect(expectProblem(reply, 403).detail).toContain("mask");
    expect(reply.text).not.toContain(VISA);
    await expectStillMasked(tenant, card.id);
  });

  it("nor by changing the fingerprint expression (the fingerprint would be an oracle of the data)", async () => {
    const { card, updater } = await cardAndMaskingKey();
    const reply = await patchToken(updater.key, card.id, { fingerprint_expression: "{{ data.number | slice: 0, 1 }}" });
    expect(expectProblem(reply, 403).detail).toContain("fingerprint_expression");
  });

  it("nor by changing the search indexes (a data: search would be an oracle of the data)", async () => {
    const { tenant, updater } = await cardAndMaskingKey();
    const ssn = await createToken(tenant.key, { type: "social_security_number", data: "123-45-6789" });
    const reply = await patchToken(updater.key, ssn.id, { search_indexes: ["{{ data | slice: 0, 1 }}"] });
    expect(expectProblem(reply, 403).detail).toContain("search_indexes");
  });

  it("nor with a partial data patch: merged data still holds what the caller never supplied", async () => {
    const { tenant, card, updater } = await cardAndMaskingKey();
    const reply = await patchToken(updater.key, card.id, { data: { cvc: "999" }, mask: "{{ data.number }}" });
    expect(expectProblem(reply, 403).detail).toContain("mask");
    await expectStillMasked(tenant, card.id);
  });

  it("a masked private key with token:update on every container is refused the same way", async () => {
    const { tenant, card } = await cardAndMaskingKey();
    const masked = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:read", "token:update"] }],
    });
    expectProblem(await patchToken(masked.key, card.id, { mask: "{{ data.number }}" }), 403);
  });

  it("may change them in the same request that replaces the whole data", async () => {
    const { card, updater } = await cardAndMaskingKey();
    const replaced = { number: "5555555555554444", expiration_month: 1, expiration_year: 2099 };
    const reply = await patchToken(updater.key, card.id, { data: { ...replaced, cvc: null }, mask: "{{ data.number }}" });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data).toBe("5555555555554444");
  });

  it("may change them when its transform is reveal on every container, before and after", async () => {
    const { tenant, card } = await cardAndMaskingKey();
    const reply = await patchToken(tenant.key, card.id, { mask: "{{ data.number | last4 }}" });
    expect(reply.status, reply.text).toBe(200);
  });

  it("reveal on one container only is not enough", async () => {
    const { tenant, card } = await cardAndMaskingKey();
    const split = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:read", "token:update"] },
        { priority: 2, container: "/public/", transform: "mask", permissions: ["token:create", "token:read", "token:update"] },
      ],
    });
    const reply = await patchToken(split.key, card.id, { containers: ["/pci/high/", "/public/"], mask: "{{ data.number }}" });
    expect(expectProblem(reply, 403).detail).toContain("mask");
  });

  it("removing a container the caller is not revealed in is refused: it would loosen every reader's rule", async () => {
    const { tenant, card } = await cardAndMaskingKey();
    const mover = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/public/", transform: "reveal", permissions: ["token:create", "token:read", "token:update"] },
        { priority: 2, container: "/pci/", transform: "mask", permissions: ["token:read", "token:update"] },
      ],
    });
    const reply = await patchToken(mover.key, card.id, { containers: ["/public/"] });
    expect(expectProblem(reply, 403).detail).toContain("containers");
    const read = await call("GET", `/tokens/${card.id}`, { key: mover.key });
    expect(read.body.containers).toEqual(["/pci/high/"]);
    expect(JSON.stringify(read.body)).not.toContain(VISA);
  });

  it("the same rule holds for bt.tokens.update in tenant code", async () => {
    const { tenant, card, updater } = await cardAndMaskingKey();
    const formula = await createFormula(tenant, {
      code: `module.exports = async (req) => {
        try { return { raw: { updated: await req.bt.tokens.update(req.args.id, { mask: "{{ data }}" }) } }; }
        catch (error) { return { raw: { status: error.status, detail: error.message } }; }
      };`,
      request_parameters: [{ name: "id", type: "string", optional: false }],
    });
    const reactor = await createReactor(tenant, formula.id, { applicationId: updater.id });
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const reply = await react(caller.key, reactor.id, { id: card.id });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.text).not.toContain(VISA);
    expect(reply.body.raw.status).toBe(403);
    await expectStillMasked(tenant, card.id);
  });
});
