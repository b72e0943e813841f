import { describe, expect, it } from "vitest";
import { principalForKey } from "../../src/auth/service";
import { useTokens } from "../../src/tokens/use";
import { requestContext, tenantContext } from "../support/context";
import { type ApplicationSpec, call, createApplication, expectProblem } from "../support/harness";
import { createToken, patchToken, seedTokenTenant, VISA } from "../support/tokens";

const onPci = (transform: "reveal" | "mask" | "redact", permissions = ["token:read"]): ApplicationSpec => ({
  type: "private",
  rules: [{ priority: 1, container: "/pci/", transform, permissions }],
});

/** A tenant with a card token, and three applications that read /pci/ under different transforms. */
async function cardAndThreeReaders() {
  const tenant = await seedTokenTenant();
  const card = await createToken(tenant.key, { type: "card_number", data: VISA });
  const [revealer, masker, redactor] = await Promise.all([
    createApplication(tenant, onPci("reveal")),
    createApplication(tenant, onPci("mask")),
    createApplication(tenant, onPci("redact")),
  ]);
  return { tenant, card, revealer, masker, redactor };
}

async function detokenize(key: string, ids: string[]) {
  const principal = (await principalForKey(requestContext(), key))!;
  return useTokens(await tenantContext(principal.tenantId), principal, ids);
}

describe("access transforms", () => {
  it("reveal returns the data", async () => {
    const { card, revealer } = await cardAndThreeReaders();
    expect((await call("GET", `/tokens/${card.id}`, { key: revealer.key })).body.data).toBe(VISA);
  });

  it("mask returns the evaluated mask", async () => {
    const { card, masker } = await cardAndThreeReaders();
    expect((await call("GET", `/tokens/${card.id}`, { key: masker.key })).body.data).toBe("XXXXXXXXXXXX4242");
  });

  it("redact omits data and the fingerprint", async () => {
    const { card, redactor } = await cardAndThreeReaders();
    const read = await call("GET", `/tokens/${card.id}`, { key: redactor.key });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty("data");
    expect(read.body).not.toHaveProperty("fingerprint");
    expect(read.body).toMatchObject({ id: card.id, containers: ["/pci/high/"] });
  });

  it("mask on a token without a mask is redacted", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x", containers: ["/pci/other/"] });
    const masker = await createApplication(tenant, onPci("mask"));
    expect((await call("GET", `/tokens/${token.id}`, { key: masker.key })).body).not.toHaveProperty("data");
  });

  it("no matching rule is a 403 for a single read", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x" });
    const pciOnly = await createApplication(tenant, onPci("reveal"));
    const problem = expectProblem(await call("GET", `/tokens/${token.id}`, { key: pciOnly.key }), 403);
    expect(problem.detail).toContain("token:read");
  });

  it("a rule applies only to the permissions it lists", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const searchOnly = await createApplication(tenant, onPci("reveal", ["token:search"]));
    expectProblem(await call("GET", `/tokens/${card.id}`, { key: searchOnly.key }), 403);
  });

  it("the first matching rule by priority wins, and a rule covers sub-containers", async () => {
    const tenant = await seedTokenTenant();
    const high = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/pci/high/"] });
    const low = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/pci/low/"] });
    const reader = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 2, container: "/pci/", transform: "reveal", permissions: ["token:read"] },
        { priority: 1, container: "/pci/high/", transform: "redact", permissions: ["token:read"] },
      ],
    });
    expect((await call("GET", `/tokens/${high.id}`, { key: reader.key })).body).not.toHaveProperty("data");
    expect((await call("GET", `/tokens/${low.id}`, { key: reader.key })).body.data).toBe(VISA);
  });

  it("plain permissions without rules mask on read and reveal on use", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:read", "token:use"] });
    expect((await call("GET", `/tokens/${card.id}`, { key: plain.key })).body.data).toBe("XXXXXXXXXXXX4242");
    expect((await detokenize(plain.key, [card.id])).get(card.id)).toBe(VISA);
  });

  it("detokenization applies the token:use transform, and refuses a redacting rule", async () => {
    const { tenant, card } = await cardAndThreeReaders();
    const [revealer, masker, redactor] = await Promise.all([
      createApplication(tenant, onPci("reveal", ["token:use"])),
      createApplication(tenant, onPci("mask", ["token:use"])),
      createApplication(tenant, onPci("redact", ["token:use"])),
    ]);
    expect((await detokenize(revealer.key, [card.id])).get(card.id)).toBe(VISA);
    expect((await detokenize(masker.key, [card.id])).get(card.id)).toBe("XXXXXXXXXXXX4242");
    await expect(detokenize(redactor.key, [card.id])).rejects.toMatchObject({ status: 403 });
  });

  it("detokenization without a rule for the token is a 403 naming it", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "x" });
    const pciUser = await createApplication(tenant, onPci("reveal", ["token:use"]));
    await expect(detokenize(pciUser.key, [token.id])).rejects.toMatchObject({ status: 403, message: expect.stringContaining(token.id) });
  });

  it("create and update responses use the create and update transforms", async () => {
    const tenant = await seedTokenTenant();
    const writer = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "mask", permissions: ["token:create"] },
        { priority: 2, container: "/pci/", transform: "redact", permissions: ["token:update"] },
      ],
    });
    const created = await createToken(writer.key, { type: "card_number", data: VISA });
    expect(created.data).toBe("XXXXXXXXXXXX4242");
    const updated = await patchToken(writer.key, created.id, { metadata: { a: "b" } });
    expect(updated.status).toBe(200);
    expect(updated.body).not.toHaveProperty("data");
  });

  it("creating needs token:create on every container of the token", async () => {
    const tenant = await seedTokenTenant();
    const writer = await createApplication(tenant, onPci("reveal", ["token:create"]));
    const problem = expectProblem(
      await call("POST", "/tokens", { key: writer.key, body: { type: "card_number", data: VISA, containers: ["/pci/a/", "/other/"] } }),
      403,
    );
    expect(problem.detail).toContain("/other/");
    expect(problem.detail).not.toContain("/pci/a/");
  });

  it("another tenant's token is a 404, never a 403", async () => {
    const { card } = await cardAndThreeReaders();
    const stranger = await seedTokenTenant();
    expectProblem(await call("GET", `/tokens/${card.id}`, { key: stranger.key }), 404);
    await expect(detokenize(stranger.key, [card.id])).rejects.toMatchObject({ status: 400 });
  });
});
