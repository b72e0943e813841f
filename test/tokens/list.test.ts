import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { createToken, expireToken, SSN, seedTokenTenant, VISA } from "../support/tokens";

const list = (key: string, query = "") => call("GET", `/tokens${query}`, { key });
const idsOf = (reply: { body: { data: { id: string }[] } }) => reply.body.data.map((token) => token.id);

describe("GET /tokens", () => {
  it("lists the tenant's tokens newest first as {pagination, data}, with data per the caller's read transform", async () => {
    const { key, tenantId } = await seedTokenTenant();
    const first = await createToken(key, { type: "token", data: "first" });
    const second = await createToken(key, { type: "card_number", data: VISA });
    const reply = await list(key);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.pagination).toEqual({ total_items: 2, page_number: 1, page_size: 20, total_pages: 1 });
    expect(idsOf(reply)).toEqual([second.id, first.id]);
    expect(reply.body.data[0]).toMatchObject({
      id: second.id,
      type: "card_number",
      tenant_id: tenantId,
      data: VISA,
      containers: ["/pci/high/"],
    });
  });

  it("pages with page and size", async () => {
    const { key } = await seedTokenTenant();
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createToken(key, { type: "token", data: `v${i}` }));
    const newestFirst = created.map((token) => token.id).reverse();
    const second = await list(key, "?page=2&size=2");
    expect(second.body.pagination).toEqual({ total_items: 5, page_number: 2, page_size: 2, total_pages: 3 });
    expect(idsOf(second)).toEqual(newestFirst.slice(2, 4));
    expect(idsOf(await list(key, "?page=3&size=2"))).toEqual(newestFirst.slice(4));
  });

  it("answers /tokens/ with a trailing slash and metadata.<key> parameters, as the JS SDK's tokens.list sends them", async () => {
    const { key } = await seedTokenTenant();
    const tagged = await createToken(key, { type: "token", data: "a", metadata: { team: "blue" } });
    await createToken(key, { type: "token", data: "b" });
    expect(idsOf(await call("GET", "/tokens/?metadata.team=blue&page=1&size=5", { key }))).toEqual([tagged.id]);
  });

  it("refuses a size over 100 or a page below 1 with a 400 naming it", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await list(key, "?size=101"), 400).errors).toEqual({ size: ["must be at most 100"] });
    expect(expectProblem(await list(key, "?page=0"), 400).errors).toEqual({ page: ["must be at least 1"] });
  });

  it("refuses cursor paging (start) with a 400 instead of answering the first page again", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await list(key, "?start=abc"), 400).errors).toEqual({
      start: ["cursor paging is not supported; use page and size"],
    });
  });

  it("filters by id, repeated; UUIDs in any case, chosen ids exactly", async () => {
    const { key } = await seedTokenTenant();
    const a = await createToken(key, { type: "token", data: "a" });
    const b = await createToken(key, { id: "Chosen B", type: "token", data: "b" });
    await createToken(key, { type: "token", data: "c" });
    expect(idsOf(await list(key, `?id=${a.id.toUpperCase()}&id=${encodeURIComponent("Chosen B")}`))).toEqual([b.id, a.id]);
    expect(idsOf(await list(key, `?id=${encodeURIComponent("chosen b")}`))).toEqual([]);
  });

  it("filters by type, repeated; an unknown type is a 400", async () => {
    const { key } = await seedTokenTenant();
    const card = await createToken(key, { type: "card_number", data: VISA });
    const ssn = await createToken(key, { type: "social_security_number", data: SSN });
    await createToken(key, { type: "token", data: "t" });
    expect(idsOf(await list(key, "?type=card_number"))).toEqual([card.id]);
    expect(idsOf(await list(key, "?type=card_number&type=social_security_number"))).toEqual([ssn.id, card.id]);
    expect(expectProblem(await list(key, "?type=pan"), 400).errors?.["type[0]"]?.[0]).toContain("must be one of");
  });

  it("filters by metadata.<key>=value, case-insensitive exact matches, every filter applying", async () => {
    const { key } = await seedTokenTenant();
    const both = await createToken(key, { type: "token", data: "1", metadata: { Customer: "ACME", region: "eu" } });
    const acme = await createToken(key, { type: "token", data: "2", metadata: { customer: "acme", region: "us" } });
    await createToken(key, { type: "token", data: "3", metadata: { customer: "acme corp" } });
    expect(idsOf(await list(key, "?metadata.customer=Acme"))).toEqual([acme.id, both.id]);
    expect(idsOf(await list(key, "?metadata.customer=acme&metadata.REGION=EU"))).toEqual([both.id]);
    expect(idsOf(await list(key, "?metadata.customer=acme&metadata.missing=x"))).toEqual([]);
  });

  it("a metadata key repeated counts once, with its first value", async () => {
    const { key } = await seedTokenTenant();
    const eu = await createToken(key, { type: "token", data: "1", metadata: { region: "eu" } });
    await createToken(key, { type: "token", data: "2", metadata: { region: "us" } });
    expect(idsOf(await list(key, "?metadata.region=eu&metadata.region=us"))).toEqual([eu.id]);
  });

  it("a metadata filter without a key is a 400", async () => {
    const { key } = await seedTokenTenant();
    expect(expectProblem(await list(key, "?metadata.=x"), 400).errors?.["metadata."]?.[0]).toContain("must name a metadata key");
  });

  it("combines filters: id, type and metadata all apply", async () => {
    const { key } = await seedTokenTenant();
    const match = await createToken(key, { type: "token", data: "1", metadata: { k: "v" } });
    const otherType = await createToken(key, { type: "card_number", data: VISA, metadata: { k: "v" } });
    const query = `?id=${match.id}&id=${otherType.id}&type=token&metadata.k=v`;
    expect(idsOf(await list(key, query))).toEqual([match.id]);
  });

  it("leaves out expired tokens", async () => {
    const { key } = await seedTokenTenant();
    const live = await createToken(key, { type: "token", data: "live" });
    const expired = await createToken(key, { type: "token", data: "expired" });
    await expireToken(expired.id);
    const reply = await list(key);
    expect(idsOf(reply)).toEqual([live.id]);
    expect(reply.body.pagination.total_items).toBe(1);
  });

  it("never shows another tenant's tokens, even by id", async () => {
    const owner = await seedTokenTenant();
    const other = await seedTokenTenant();
    const token = await createToken(owner.key, { id: "owner-only", type: "token", data: "x" });
    expect((await list(other.key)).body).toEqual({
      pagination: { total_items: 0, page_number: 1, page_size: 20, total_pages: 0 },
      data: [],
    });
    expect(idsOf(await list(other.key, `?id=${token.id}`))).toEqual([]);
  });

  it("shows only tokens in containers where the caller holds token:read, each under its rule's transform", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const ssn = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    await createToken(tenant.key, { type: "token", data: "general" });
    const partial = await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "mask", permissions: ["token:read"] },
        { priority: 2, container: "/pii/high/", transform: "reveal", permissions: ["token:read"] },
        { priority: 3, container: "/general/", transform: "reveal", permissions: ["token:create"] },
      ],
    });
    const reply = await list(partial.key);
    expect(reply.body.pagination.total_items).toBe(2);
    expect(reply.body.data.map((token: { id: string; data?: unknown }) => [token.id, token.data])).toEqual([
      [ssn.id, SSN],
      [card.id, "XXXXXXXXXXXX4242"],
    ]);
  });

  it("a rule that redacts lists the token without data", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "token", data: "hidden" });
    const redacting = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "redact", permissions: ["token:read"] }],
    });
    const [listed] = (await list(redacting.key)).body.data;
    expect(listed.id).toBe(token.id);
    expect(listed).not.toHaveProperty("data");
  });

  it("plain token:read (no rules) covers every container and masks", async () => {
    const tenant = await seedTokenTenant();
    await createToken(tenant.key, { type: "card_number", data: VISA });
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expect((await list(reader.key)).body.data.map((token: { data?: unknown }) => token.data)).toEqual(["XXXXXXXXXXXX4242"]);
  });

  it("needs token:read (403) and an API key (401)", async () => {
    const tenant = await seedTokenTenant();
    const creator = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    expect(expectProblem(await list(creator.key), 403).detail).toContain("token:read");
    expectProblem(await call("GET", "/tokens"), 401);
    const management = await seedTenant();
    expectProblem(await list(management.managementKey), 403);
  });

  it("is in the OpenAPI document with its query parameters", async () => {
    const document = (await call("GET", "/openapi.json")).body;
    const operation = document.paths["/tokens"].get;
    const parameters: { name: string; in?: string }[] = operation.parameters;
    expect(
      parameters
        .filter((parameter) => parameter.in === "query")
        .map((parameter) => `${parameter.in}:${parameter.name}`)
        .sort(),
    ).toEqual(["query:id", "query:page", "query:size", "query:type"]);
    expect(operation.description).toContain("metadata.<key>=<value>");
    expect(Object.keys(operation.responses).sort()).toEqual(["200", "400", "401", "403", "429"]);
    expect(operation.responses["200"].content["application/json"].schema.properties).toHaveProperty("pagination");
  });
});
