import { join } from "node:path";
import { BasisTheory } from "@basis-theory/basis-theory-js";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The tenant's usage report (GET /tenants/self/reports/usage) read by the original interface's
 * clients, unchanged, with HEADER_PREFIX=BT: the JS SDK's tenants.retrieveUsageReport and the Node
 * SDK 5.7's tenants.self.getUsageReports. One vault serves both (the JS SDK speaks plain HTTP only
 * to a host named localhost).
 */

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let managementKey: string;

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-usage-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, host: "localhost", bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "usage" }),
  }).then((reply) => reply.json() as Promise<any>);
  managementKey = tenant.application.key;
  const writer = await new BasisTheoryClient({ apiKey: managementKey, baseUrl: vault.baseUrl, maxRetries: 0 }).applications.create({
    name: "writer",
    type: "private",
    permissions: ["token:create"],
  });
  const tokens = new BasisTheoryClient({ apiKey: writer.key, baseUrl: vault.baseUrl, maxRetries: 0 }).tokens;
  await tokens.create({ type: "token", data: "one", containers: ["/general/"] });
  await tokens.create({ type: "token", data: "two", containers: ["/general/"] });
  await tokens.create({ type: "card_number", data: "4242424242424242" });
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the usage report through the original interface's clients, with HEADER_PREFIX=BT", () => {
  it("the Node SDK 5.7's tenants.self.getUsageReports parses the total and the counts by type", async () => {
    const management = new BasisTheoryClient({ apiKey: managementKey, baseUrl: vault.baseUrl, maxRetries: 0 });
    const report: any = await management.tenants.self.getUsageReports();
    expect(report.totalTokens).toBe(3);
    // 5.7 types only total_tokens and passes the rest through as the vault wrote it.
    expect(report.token_report.metrics_by_type).toEqual({
      token: { count: 2, last_created_at: expect.stringMatching(/Z$/) },
      card_number: { count: 1, last_created_at: expect.stringMatching(/Z$/) },
    });
    expect(report.token_report.metrics_by_container).toEqual({ "/general/": { count: 2 }, "/pci/high/": { count: 1 } });
  });

  it("the JS SDK's tenants.retrieveUsageReport parses it into its TenantUsageReport", async () => {
    const bt = (await new BasisTheory().init(managementKey, {
      apiBaseUrl: vault.baseUrl.replace("127.0.0.1", "localhost"),
      disableTelemetry: true,
    })) as BasisTheory;
    const report: any = await bt.tenants.retrieveUsageReport();
    expect(report.totalTokens).toBe(3);
    expect(report.tokenReport.totalTokens).toBe(3);
    // The SDK camel-cases every key of the answer, type names included, as it would the original's.
    expect(report.tokenReport.metricsByType).toEqual({
      token: { count: 2, lastCreatedAt: expect.stringMatching(/Z$/) },
      cardNumber: { count: 1, lastCreatedAt: expect.stringMatching(/Z$/) },
    });
  });
});
