import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, seedTenant } from "../support/harness";

describe("smoke", () => {
  it("bootstrap key lists the bootstrap application", async () => {
    const reply = await call("GET", "/applications", { key: env.BOOTSTRAP_API_KEY });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.data[0].name).toBe("bootstrap");
  });
  it("seeds a tenant", async () => {
    const tenant = await seedTenant();
    const reply = await call("GET", "/applications", { key: tenant.managementKey });
    expect(reply.status).toBe(200);
    expect(reply.body.pagination.total_items).toBe(1);
  });
});
