import { describe, expect, it } from "vitest";
import { call, expectProblem, rowCounts, seedTenant } from "../support/harness";

const create = (key: string, idempotencyKey: string, name: string) =>
  call("POST", "/applications", {
    key,
    body: { name, type: "public", permissions: ["token:create"] },
    headers: { "SVC-IDEMPOTENCY-KEY": idempotencyKey },
  });

describe("idempotency", () => {
  it("replays the first response for the same key and body, creating nothing new", async () => {
    const tenant = await seedTenant();
    const first = await create(tenant.managementKey, "order-1", "Replay");
    expect(first.status).toBe(201);
    const before = await rowCounts();
    const second = await create(tenant.managementKey, "order-1", "Replay");
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(await rowCounts()).toEqual(before);
  });

  it("answers 409 when the key is reused with a different body", async () => {
    const tenant = await seedTenant();
    expect((await create(tenant.managementKey, "order-2", "First")).status).toBe(201);
    const problem = expectProblem(await create(tenant.managementKey, "order-2", "Second"), 409);
    expect(problem.detail).toMatch(/different request/);
  });

  it("replays a validation failure too, as the same 400", async () => {
    const tenant = await seedTenant();
    const bad = { name: "x", type: "public", permissions: ["token:use"] };
    const headers = { "SVC-IDEMPOTENCY-KEY": "bad-1" };
    const first = await call("POST", "/applications", { key: tenant.managementKey, body: bad, headers });
    const second = await call("POST", "/applications", { key: tenant.managementKey, body: bad, headers });
    expectProblem(second, 400);
    expect(second.body).toEqual(first.body);
  });

  it("keeps keys apart per application and per tenant", async () => {
    const one = await seedTenant();
    const two = await seedTenant();
    const a = await create(one.managementKey, "shared-key", "A");
    const b = await create(two.managementKey, "shared-key", "A");
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it("refuses an idempotency key that is too long", async () => {
    const tenant = await seedTenant();
    expectProblem(await create(tenant.managementKey, "k".repeat(256), "A"), 400);
  });

  it("applies to creating requests only: a repeated GET is just a GET", async () => {
    const tenant = await seedTenant();
    const headers = { "SVC-IDEMPOTENCY-KEY": "read-1" };
    const first = await call("GET", "/applications", { key: tenant.managementKey, headers });
    await create(tenant.managementKey, "read-1-other", "New");
    const second = await call("GET", "/applications", { key: tenant.managementKey, headers });
    expect(second.body.pagination.total_items).toBe(first.body.pagination.total_items + 1);
  });
});
