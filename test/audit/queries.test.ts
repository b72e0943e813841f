import { beforeAll, describe, expect, it } from "vitest";
import { type LogEntry, logEntries } from "../support/audit";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { createToken, SSN, seedTokenTenant, type TokenTenant } from "../support/tokens";

/* GET /logs and GET /logs/entity-types: the permission, the filters and pagination. */

let tenant: TokenTenant;
let tokens: { id: string }[];
let entries: LogEntry[];

beforeAll(async () => {
  tenant = await seedTokenTenant();
  tokens = [];
  for (let i = 0; i < 3; i++)
    tokens.push(await createToken(tenant.key, { type: "social_security_number", data: `${SSN}${i}`.slice(0, 11) }));
  for (const token of tokens) expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
  // tenant creation, application creation, 3 creates, 3 reads
  entries = await logEntries(tenant, 8);
});

const list = (key: string, query: Record<string, string> = {}) => call("GET", `/logs?${new URLSearchParams(query)}`, { key });

describe("GET /logs", () => {
  it("needs log:read, which management applications may hold and others may not", async () => {
    expectProblem(await list(tenant.key), 403);
    const other = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    expectProblem(await list(other.key), 403);
    const auditor = await createApplication(tenant, { type: "management", permissions: ["log:read"] });
    expect((await list(auditor.key)).status).toBe(200);
    const refused = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "x", type: "private", permissions: ["log:read"] },
    });
    expect(JSON.stringify(expectProblem(refused, 400).errors)).toContain("log:read");
  });

  it("lists newest first, in pages", async () => {
    const first = await list(tenant.managementKey, { size: "3", entity_type: "token" });
    expect(first.status).toBe(200);
    expect(first.body.pagination).toMatchObject({ total_items: 6, page_size: 3, page_number: 1, total_pages: 2 });
    const second = await list(tenant.managementKey, { size: "3", page: "2", entity_type: "token" });
    const listed = [...first.body.data, ...second.body.data] as LogEntry[];
    expect(listed.map((entry) => entry.seq)).toEqual(listed.map((entry) => entry.seq).toSorted((a, b) => b - a));
    expect(new Set(listed.map((entry) => entry.id)).size).toBe(6);
  });

  it("filters by entity type and entity id", async () => {
    const byId = await list(tenant.managementKey, { entity_type: "token", entity_id: tokens[1]!.id });
    expect((byId.body.data as LogEntry[]).map((entry) => entry.operation).toSorted()).toEqual(["create", "read"]);
    const applications = await list(tenant.managementKey, { entity_type: "application" });
    expect((applications.body.data as LogEntry[]).map((entry) => entry.operation)).toEqual(["create"]);
    expect((await list(tenant.managementKey, { entity_type: "webhook" })).body.data).toEqual([]);
  });

  it("filters by start_date (inclusive) and end_date (exclusive)", async () => {
    const tokenEntries = entries.filter((entry) => entry.entity_type === "token");
    const pivot = tokenEntries[3]!;
    const from = await list(tenant.managementKey, { entity_type: "token", start_date: pivot.created_at });
    const before = await list(tenant.managementKey, { entity_type: "token", end_date: pivot.created_at });
    const fromIds = (from.body.data as LogEntry[]).map((entry) => entry.id);
    const beforeIds = (before.body.data as LogEntry[]).map((entry) => entry.id);
    expect(fromIds).toContain(pivot.id);
    expect(beforeIds).not.toContain(pivot.id);
    expect(fromIds.length + beforeIds.length).toBe(6);
    expectProblem(await list(tenant.managementKey, { start_date: "yesterday" }), 400);
  });

  it("filters by actor_id, an extension: the application that made the request", async () => {
    const actor = entries.find((entry) => entry.entity_type === "token")!.actor_id!;
    const byActor = await list(tenant.managementKey, { actor_id: actor });
    expect(byActor.status).toBe(200);
    const listed = byActor.body.data as LogEntry[];
    expect(listed.filter((entry) => entry.entity_type === "token")).toHaveLength(6);
    expect(listed.every((entry) => entry.actor_id === actor)).toBe(true);
    expect((await list(tenant.managementKey, { actor_id: crypto.randomUUID() })).body.data).toEqual([]);
  });

  it("filters by operation, an extension, with the other filters", async () => {
    const reads = await list(tenant.managementKey, { operation: "read", entity_type: "token" });
    expect((reads.body.data as LogEntry[]).map((entry) => entry.entity_id).toSorted()).toEqual(tokens.map((token) => token.id).toSorted());
    const creates = await list(tenant.managementKey, { operation: "create", entity_id: tokens[2]!.id });
    expect((creates.body.data as LogEntry[]).map((entry) => entry.operation)).toEqual(["create"]);
    expectProblem(await list(tenant.managementKey, { operation: "x".repeat(65) }), 400);
  });

  it("pages by cursor: a numbered page answers next, and start gives the page after it without counting", async () => {
    const first = await list(tenant.managementKey, { size: "2", entity_type: "token" });
    expect(first.body.pagination).toMatchObject({ total_items: 6, page_number: 1, next: expect.any(String) });
    const second = await list(tenant.managementKey, { size: "2", entity_type: "token", start: first.body.pagination.next });
    expect(second.status).toBe(200);
    expect(second.body.pagination).toEqual({ page_size: 2, next: expect.any(String) });
    const third = await list(tenant.managementKey, { size: "2", entity_type: "token", start: second.body.pagination.next });
    expect(third.body.pagination).toEqual({ page_size: 2 });
    const listed = [first, second, third].flatMap((reply) => reply.body.data as LogEntry[]);
    const numbered = await list(tenant.managementKey, { size: "6", entity_type: "token" });
    expect(listed.map((entry) => entry.id)).toEqual((numbered.body.data as LogEntry[]).map((entry) => entry.id));
    // The last numbered page names no next page.
    expect(numbered.body.pagination.next).toBeUndefined();
  });

  it("a cursor is good only for the same filters, key and tenant, and not with page", async () => {
    const first = await list(tenant.managementKey, { size: "2", entity_type: "token" });
    const start = first.body.pagination.next as string;
    expectProblem(await list(tenant.managementKey, { size: "2", entity_type: "token", operation: "read", start }), 400);
    expectProblem(await list(tenant.managementKey, { size: "2", entity_type: "token", start, page: "2" }), 400);
    expectProblem(await list(tenant.managementKey, { start: "not-a-cursor" }), 400);
    const auditor = await createApplication(tenant, { type: "management", permissions: ["log:read"] });
    expectProblem(await list(auditor.key, { size: "2", entity_type: "token", start }), 400);
    const other = await seedTenant();
    expectProblem(await list(other.managementKey, { size: "2", entity_type: "token", start }), 400);
  });

  it("never shows another tenant's entries", async () => {
    const other: Tenant = await seedTenant();
    const seen = await logEntries(other, 1);
    expect(seen.every((entry) => entry.tenant_id === other.tenantId)).toBe(true);
    const filtered = await list(other.managementKey, { entity_id: tokens[0]!.id });
    expect(filtered.body.data).toEqual([]);
  });
});

describe("GET /logs/entity-types", () => {
  it("lists what entries can name", async () => {
    const reply = await call("GET", "/logs/entity-types", { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body).toContainEqual({ display_name: "Token", value: "token" });
    expect(reply.body).toContainEqual({ display_name: "Reactor formula", value: "reactor-formula" });
    expectProblem(await call("GET", "/logs/entity-types", { key: tenant.key }), 403);
  });
});
