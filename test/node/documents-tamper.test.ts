import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";
import { DOCUMENTS } from "../../src/limits";

/*
 * A stored document altered after its first chunk (docs/documents.md): the answer has started, so
 * the vault ends it short of its Content-Length. workerd logs every response body that ends in an
 * error as an uncaught exception with native stack addresses, and the workers test pool prints its
 * logs; so these cases run here, from Node, against the vault as `npm start` runs it, with the log
 * captured and asserted instead of printed. The first chunk's cases, refused before the answer
 * starts, are in test/documents/documents.test.ts.
 */

const SEALED_CHUNK = DOCUMENTS.chunkBytes + 16;

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let logs: string[] = [];
let tenantId: string;
let key: string;

async function post(path: string, headers: Record<string, string>, body: unknown) {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  expect(reply.status, path).toBe(201);
  return (await reply.json()) as any;
}

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "node-tests-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, onLog: ({ message }) => void logs.push(message) });
  const tenant = await post("/tenants", { "SVC-OPERATOR-KEY": vault.operatorKey }, { name: "documents tamper" });
  tenantId = tenant.tenant.id;
  const application = await post(
    "/applications",
    { "SVC-API-KEY": tenant.application.keys[0].key },
    { name: "documents", type: "private", permissions: ["documents:create", "documents:read", "documents:reveal"] },
  );
  key = application.keys[0].key;
});

afterAll(async () => {
  await vault?.dispose();
});

/** `size` bytes that differ chunk from chunk, so a chunk answered in another's place would show. */
function documentOf(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + (i >>> 16)) & 0xff;
  return bytes;
}

async function uploaded(document: Uint8Array): Promise<string> {
  const form = new FormData();
  form.append("document", new Blob([document], { type: "application/pdf" }), "scan.pdf");
  const reply = await fetch(`${vault.baseUrl}/documents`, { method: "POST", headers: { "SVC-API-KEY": key }, body: form });
  const body = (await reply.json()) as { id: string };
  expect(reply.status, JSON.stringify(body)).toBe(201);
  return body.id;
}

/** The stored object, changed by `alter`, put back in the bucket. */
async function alterObject(id: string, alter: (raw: Uint8Array) => Uint8Array): Promise<void> {
  const bucket = await vault.mf.getR2Bucket("DOCUMENTS", "vault");
  const objectKey = `documents/${tenantId}/${id}`;
  const raw = new Uint8Array(await (await bucket.get(objectKey))!.arrayBuffer());
  await bucket.put(objectKey, alter(raw));
}

/** The download's status, the bytes a client received before the body failed, and whether it failed. */
async function download(id: string): Promise<{ status: number; received: number; failed: boolean }> {
  const reply = await fetch(`${vault.baseUrl}/documents/${id}/data`, { headers: { "SVC-API-KEY": key } });
  let received = 0;
  try {
    for await (const bytes of reply.body as unknown as AsyncIterable<Uint8Array>) received += bytes.length;
    return { status: reply.status, received, failed: false };
  } catch {
    return { status: reply.status, received, failed: true };
  }
}

describe("a document altered after its first chunk", () => {
  it("ends the download in an error before the altered chunk: the client never gets a whole body, and the vault logs why", async () => {
    const id = await uploaded(documentOf(5 * DOCUMENTS.chunkBytes + 100));
    // One bit of the fourth chunk's ciphertext (chunk 3).
    await alterObject(id, (raw) => {
      raw[3 * SEALED_CHUNK + 10]! ^= 1;
      return raw;
    });
    logs = [];
    const outcome = await download(id);
    expect(outcome.status).toBe(200);
    expect(outcome.failed).toBe(true);
    expect(outcome.received).toBeLessThanOrEqual(3 * DOCUMENTS.chunkBytes);
    await expect.poll(() => logs.join("\n"), { timeout: 5_000 }).toContain("Chunk 3 of the document failed authentication");
  });

  it("with bytes appended after its last chunk does not answer them", async () => {
    const size = 6 * DOCUMENTS.chunkBytes + 7;
    const id = await uploaded(documentOf(size));
    await alterObject(id, (raw) => {
      const longer = new Uint8Array(raw.length + 40);
      longer.set(raw);
      return longer;
    });
    logs = [];
    const outcome = await download(id);
    expect(outcome.failed).toBe(true);
    expect(outcome.received).toBeLessThan(size);
    await expect.poll(() => logs.join("\n"), { timeout: 5_000 }).toContain("of the document failed authentication");
  });
});
