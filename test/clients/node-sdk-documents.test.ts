import { join } from "node:path";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with HEADER_PREFIX=BT:
 * documents (`documents.upload`, `documents.get`, `documents.data.get`, `documents.delete`).
 */

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let server: BasisTheoryClient;

const client = (apiKey?: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-documents-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk documents" }),
  }).then((reply) => reply.json() as Promise<any>);
  const application = await client(tenant.application.key).applications.create({
    name: "server",
    type: "private",
    permissions: ["documents:create", "documents:read", "documents:reveal", "documents:delete"],
  });
  server = client(application.key);
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the Node SDK 5.7 against the vault with HEADER_PREFIX=BT: documents", () => {
  it("documents.upload stores a file with metadata; get reads it, data.get downloads it, delete removes it", async () => {
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 251);
    const uploaded = await server.documents.upload({
      document: new Blob([bytes], { type: "application/pdf" }),
      request: { metadata: { kind: "passport" } },
    });
    expect(uploaded).toMatchObject({ id: expect.any(String), metadata: { kind: "passport" }, contentType: "application/pdf" });
    expect(uploaded.createdAt).toBeInstanceOf(Date);
    const read = await server.documents.get(uploaded.id!);
    expect(read).toMatchObject({ id: uploaded.id, tenantId: uploaded.tenantId, metadata: { kind: "passport" } });
    const data = await server.documents.data.get(uploaded.id!);
    expect(Buffer.compare(new Uint8Array(await data.arrayBuffer()), bytes)).toBe(0);
    await server.documents.delete(uploaded.id!);
    await expect(server.documents.get(uploaded.id!)).rejects.toMatchObject({ statusCode: 404 });
  });
});
