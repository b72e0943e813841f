import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DATA_BINDINGS } from "../support/context";
import { call, callRoute, createApplication, expectProblem, type Tenant } from "../support/harness";
import { createProxy, invoke } from "../support/proxies";
import { createToken, REVEAL_EVERYTHING } from "../support/tokens";

/*
 * The test pool binds a control database (DB) and two data databases (DB_1, DB_2). Tenants are
 * placed by the directory; each one's tokens live only in its data database.
 */

const DATA = DATA_BINDINGS;

async function tenantIn(database?: string): Promise<Tenant & { database: string }> {
  const reply = await callRoute("POST /tenants", 201, {
    body: { name: `placed ${database ?? "anywhere"}`, ...(database ? { database } : {}) },
    headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
  });
  return {
    tenantId: reply.body.tenant.id,
    managementKey: reply.body.application.key,
    managementApplicationId: reply.body.application.id,
    database: reply.body.tenant.database,
  };
}

async function tokenRows(database: D1Database, tenantId: string): Promise<number> {
  const row = await database.prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>();
  return row!.n;
}

async function tenantsPerDatabase(): Promise<Record<string, number>> {
  const { results } = await env.DB.prepare("SELECT database, count(*) AS n FROM tenants GROUP BY database").all<{
    database: string;
    n: number;
  }>();
  return Object.fromEntries(results.map((row) => [row.database, row.n]));
}

describe("tenant placement", () => {
  it("places a new tenant in the data database that holds the fewest tenants", async () => {
    const before = await tenantsPerDatabase();
    const fewest = (["DB_1", "DB_2"] as const).reduce((best, binding) => ((before[binding] ?? 0) < (before[best] ?? 0) ? binding : best));
    expect((await tenantIn()).database).toBe(fewest);
    const after = await tenantsPerDatabase();
    expect(after[fewest]).toBe((before[fewest] ?? 0) + 1);
  });

  it("places a tenant in the data database the operator names", async () => {
    expect((await tenantIn("DB_2")).database).toBe("DB_2");
    expect((await tenantIn("DB_1")).database).toBe("DB_1");
  });

  it("refuses a database that is not bound, naming the ones that are", async () => {
    const reply = await call("POST", "/tenants", {
      body: { name: "nowhere", database: "DB_9" },
      headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
    });
    expect(expectProblem(reply, 400).detail).toContain("DB_1, DB_2");
  });

  it("keeps each tenant's tokens in its own data database, and none in the control database", async () => {
    const tenants = [await tenantIn("DB_1"), await tenantIn("DB_2")];
    for (const tenant of tenants) {
      const { key } = await createApplication(tenant, REVEAL_EVERYTHING);
      await createToken(key, { type: "token", data: `${tenant.database} secret` });
      await call("POST", "/tokenize", { key, body: { a: "one", b: "two" } });
    }
    for (const tenant of tenants) {
      const elsewhere = tenant.database === "DB_1" ? "DB_2" : "DB_1";
      expect(await tokenRows(DATA[tenant.database]!, tenant.tenantId)).toBe(3);
      expect(await tokenRows(DATA[elsewhere]!, tenant.tenantId)).toBe(0);
      expect(await tokenRows(env.DB, tenant.tenantId)).toBe(0);
    }
  });

  it("reads, searches and detokenizes each tenant's tokens from its own data database", async () => {
    for (const database of ["DB_1", "DB_2"]) {
      const tenant = await tenantIn(database);
      const { key } = await createApplication(tenant, REVEAL_EVERYTHING);
      const token = await createToken(key, { type: "token", data: `in ${database}`, metadata: { home: database } });
      expect((await call("GET", `/tokens/${token.id}`, { key })).body.data).toBe(`in ${database}`);
      const search = await call("POST", "/tokens/search", { key, body: { query: `metadata.home:${database}` } });
      expect(search.body.data.map((found: { id: string }) => found.id)).toEqual([token.id]);
      const proxy = await createProxy(tenant, {
        require_auth: false,
        application: { id: (await createApplication(tenant, REVEAL_EVERYTHING)).id },
      });
      const forwarded = await invoke("POST", "", { proxyKey: proxy.key, body: { value: `{{ ${token.id} }}` } });
      expect(JSON.parse(forwarded.json.body)).toEqual({ value: `in ${database}` });
    }
  });
});
