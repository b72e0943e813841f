import { beforeAll, describe, expect, it } from "vitest";
import { createApplication } from "../support/harness";
import { search, searchIds, sorted } from "../support/search";
import { createToken, SSN, seedTokenTenant, type TokenTenant } from "../support/tokens";

/** Results cover only containers where the caller holds token:search, with data per its transform. */

let tenant: TokenTenant;
let pii: { id: string };
let piiHigh: { id: string };
let pci: { id: string };
let shared: { id: string };

beforeAll(async () => {
  tenant = await seedTokenTenant();
  pii = await createToken(tenant.key, { type: "social_security_number", data: SSN, containers: ["/pii/"] });
  piiHigh = await createToken(tenant.key, { type: "social_security_number", data: "987-65-4321", containers: ["/pii/high/"] });
  pci = await createToken(tenant.key, { type: "social_security_number", data: "111-22-3333", containers: ["/pci/"] });
  shared = await createToken(tenant.key, { type: "social_security_number", data: "444-55-6666", containers: ["/pci/", "/pii/high/"] });
});

const rule = (priority: number, container: string, transform: "reveal" | "mask" | "redact", permissions = ["token:search"]) => ({
  priority,
  container,
  transform,
  permissions,
});

const dataById = async (key: string, query: string | null = null) =>
  Object.fromEntries(
    (await search(key, query, { size: 100 })).body.data.map((token: { id: string; data?: string }) => [token.id, token.data]),
  );

describe("search and access rules", () => {
  it("two applications with different container rules see different tokens", async () => {
    const piiSearcher = await createApplication(tenant, { type: "private", rules: [rule(1, "/pii/", "reveal")] });
    const pciSearcher = await createApplication(tenant, { type: "private", rules: [rule(1, "/pci/", "reveal")] });
    expect(sorted(await searchIds(piiSearcher.key, null))).toEqual(sorted([pii.id, piiHigh.id, shared.id]));
    expect(sorted(await searchIds(pciSearcher.key, null))).toEqual(sorted([pci.id, shared.id]));
  });

  it("each token's data follows, per container, the first rule that covers it, and the strictest of its containers' rules", async () => {
    const revealer = await createApplication(tenant, {
      type: "private",
      rules: [rule(1, "/pii/high/", "reveal"), rule(2, "/pii/", "mask"), rule(3, "/pci/", "redact")],
    });
    const data = await dataById(revealer.key);
    expect(data[piiHigh.id]).toBe("987-65-4321");
    // In /pci/ (redact) and /pii/high/ (reveal): the strictest, redact, applies.
    expect(shared.id in data).toBe(true);
    expect(data[shared.id]).toBeUndefined();
    expect(data[pii.id]).not.toBe(SSN);
    expect(data[pii.id]).toMatch(/6789$/);
    expect(pci.id in data).toBe(true);
    expect(data[pci.id]).toBeUndefined();

    const masker = await createApplication(tenant, { type: "private", rules: [rule(1, "/", "mask")] });
    expect((await dataById(masker.key))[piiHigh.id]).toMatch(/^[^9]*4321$/);
  });

  it("plain permissions without rules search every container, with masked data", async () => {
    const plain = await createApplication(tenant, { type: "private", permissions: ["token:search"] });
    const data = await dataById(plain.key);
    expect(sorted(Object.keys(data))).toEqual(sorted([pii.id, piiHigh.id, pci.id, shared.id]));
    expect(data[pci.id]).toMatch(/3333$/);
    expect(data[pci.id]).not.toBe("111-22-3333");
  });

  it("a rule without token:search does not open its containers to search", async () => {
    const reader = await createApplication(tenant, {
      type: "private",
      rules: [rule(1, "/pii/", "reveal", ["token:read"]), rule(2, "/pci/", "mask", ["token:search"])],
    });
    expect(sorted(await searchIds(reader.key, null))).toEqual(sorted([pci.id, shared.id]));
  });

  it("a query cannot reach tokens outside the caller's containers", async () => {
    const pciSearcher = await createApplication(tenant, { type: "private", rules: [rule(1, "/pci/", "reveal")] });
    expect(await searchIds(pciSearcher.key, `id:${pii.id}`)).toEqual([]);
    expect(await searchIds(pciSearcher.key, `data:${SSN}`)).toEqual([]);
    expect(await searchIds(pciSearcher.key, "container:/pii/*")).toEqual([shared.id]);
    expect((await search(pciSearcher.key, "NOT container:/pci/")).body.pagination.total_items).toBe(0);
  });

  it("another tenant's tokens never appear, even for the same data, metadata or containers", async () => {
    const stranger = await seedTokenTenant();
    const theirs = await createToken(stranger.key, { type: "social_security_number", data: SSN, containers: ["/pii/"] });
    expect(await searchIds(tenant.key, `data:${SSN}`)).toEqual([pii.id]);
    expect(await searchIds(tenant.key, `id:${theirs.id}`)).toEqual([]);
    expect(await searchIds(stranger.key, null)).toEqual([theirs.id]);
    expect(await searchIds(stranger.key, "container:/pii/*")).toEqual([theirs.id]);
  });
});
