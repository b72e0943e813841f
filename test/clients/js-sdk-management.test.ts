import { join } from "node:path";
import { BasisTheory } from "@basis-theory/basis-theory-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's JS SDK, unchanged, managing the vault with HEADER_PREFIX=BT: applications
 * and their keys, permissions, and the PATCH and update calls of proxies and reactors as its users
 * write them. Telemetry is switched off at init, so nothing leaves this machine.
 */

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let management: BasisTheory;

const sdk = async (key: string) =>
  (await new BasisTheory().init(key, {
    // The SDK speaks plain HTTP only to a host named localhost.
    apiBaseUrl: vault.baseUrl.replace("127.0.0.1", "localhost"),
    disableTelemetry: true,
  })) as BasisTheory;

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-management-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, host: "localhost", bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "sdk-management" }),
  }).then((reply) => reply.json() as Promise<any>);
  management = await sdk(tenant.application.key);
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the JS SDK managing the vault with HEADER_PREFIX=BT", () => {
  it("applications.create answers the new key, which retrieveByKey then reads its application with", async () => {
    const created = await management.applications.create({ name: "checkout", type: "private", permissions: ["token:create"] });
    expect(created.key).toMatch(/^key_[A-Za-z0-9_-]{43}$/);
    const self = await (await sdk(created.key!)).applications.retrieveByKey();
    expect(self).toMatchObject({ id: created.id, name: "checkout", type: "private", permissions: ["token:create"] });
  });

  it("applications.regenerateKey answers a new key; the old one stops working", async () => {
    const created = await management.applications.create({ name: "rotating", type: "private", permissions: ["token:read"] });
    const regenerated = await management.applications.regenerateKey(created.id);
    expect(regenerated).toMatchObject({ id: created.id, key: expect.stringMatching(/^key_/) });
    expect(regenerated.key).not.toBe(created.key);
    await expect((await sdk(created.key!)).applications.retrieveByKey()).rejects.toMatchObject({ status: 401 });
    expect((await (await sdk(regenerated.key!)).applications.retrieveByKey()).id).toBe(created.id);
  });

  it("permissions.list filters by application type", async () => {
    const permissions = await management.permissions.list({ applicationType: "public" } as any);
    expect(permissions.map((permission) => permission.type)).toEqual([
      "token:create",
      "token:update",
      "token-intent:create",
      "google-pay:create",
      "apple-pay:create",
      "apple-pay:session",
    ]);
  });

  it("proxies.patch succeeds (204) and the change reads back", async () => {
    const proxy = await management.proxies.create({ name: "payments", destinationUrl: "https://example.com/api", requireAuth: true });
    await management.proxies.patch(proxy.id, { name: "renamed" } as any);
    expect(await management.proxies.retrieve(proxy.id)).toMatchObject({ name: "renamed", destinationUrl: "https://example.com/api" });
  });

  it("reactors.update without a formula and reactors.patch keep the reactor's formula", async () => {
    const formula = await management.reactorFormulas.create({
      name: "Echo",
      type: "private",
      code: "module.exports = async (req) => ({ raw: req.configuration });",
      configuration: [{ name: "merchant", type: "string" }],
      requestParameters: [],
    } as any);
    const application = await management.applications.create({ name: "reactor app", type: "private", permissions: ["token:create"] });
    const reactor = await management.reactors.create({
      name: "echo",
      formula: { id: formula.id },
      configuration: { merchant: "m-1" },
    } as any);
    const updated = await management.reactors.update(reactor.id, {
      name: "echo 2",
      configuration: { merchant: "m-2" },
      application: { id: application.id },
    } as any);
    expect(updated).toMatchObject({
      name: "echo 2",
      formula: { id: formula.id },
      configuration: { merchant: "m-2" },
      application: { id: application.id },
    });
    await management.reactors.patch(reactor.id, { configuration: { merchant: "m-3" } } as any);
    expect(await management.reactors.retrieve(reactor.id)).toMatchObject({ name: "echo 2", configuration: { merchant: "m-3" } });
  });

  it("logs.list reads the audit log, filtered as the SDK sends it", async () => {
    const created = await management.applications.create({ name: "audited", type: "private", permissions: ["token:read"] });
    // The queue consumer writes the entry a moment after the request.
    const deadline = Date.now() + 15_000;
    let logs = await management.logs.list({ entityType: "application", entityId: created.id } as any);
    while (logs.data.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      logs = await management.logs.list({ entityType: "application", entityId: created.id } as any);
    }
    expect(logs.data).toEqual([
      expect.objectContaining({ entityType: "application", entityId: created.id, operation: "create", actorType: "application" }),
    ]);
  });
});
