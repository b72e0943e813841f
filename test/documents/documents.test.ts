import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DOCUMENTS } from "../../src/limits";
import { runCron } from "../support/cron";
import { BASE, call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";

/*
 * Documents (docs/documents.md): uploaded as multipart/form-data, stored in R2 encrypted chunk by
 * chunk under a data key of their own, answered decrypted, and gone with their tenant's keys.
 */

const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };
const ALL = ["documents:create", "documents:read", "documents:reveal", "documents:delete"];
/** Bytes no ciphertext would hold by chance: what the raw object must not contain. */
const MARKER = new TextEncoder().encode("PASSPORT-NUMBER-X1234567-DISTINCTIVE");

let tenant: Tenant;
let key: string;

beforeAll(async () => {
  tenant = await seedTenant();
  key = (await createApplication(tenant, { type: "private", permissions: ALL })).key;
});

/** A document of `size` bytes: a pseudo-random pattern with MARKER every MiB. */
function documentOf(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let state = 0x12345678;
  for (let i = 0; i < size; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    bytes[i] = state >>> 24;
  }
  for (let at = 0; at + MARKER.length <= size; at += 1024 * 1024) bytes.set(MARKER, at);
  return bytes;
}

function upload(apiKey: string, bytes: Uint8Array, request?: string, type = "application/pdf"): Promise<Response> {
  const form = new FormData();
  form.append("document", new Blob([bytes], { type }), "passport.pdf");
  if (request !== undefined) form.append("request", request);
  return SELF.fetch(`${BASE}/documents`, { method: "POST", headers: { "SVC-API-KEY": apiKey }, body: form });
}

async function uploaded(bytes: Uint8Array, request = '{"metadata":{"kind":"passport"}}'): Promise<string> {
  const response = await upload(key, bytes, request);
  const body = (await response.json()) as { id: string };
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body.id;
}

const objectKeyOf = (tenantId: string, id: string) => `documents/${tenantId}/${id}`;

async function rawObject(tenantId: string, id: string): Promise<Uint8Array | null> {
  const object = await env.DOCUMENTS.get(objectKeyOf(tenantId, id));
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

function download(apiKey: string, id: string): Promise<Response> {
  return SELF.fetch(`${BASE}/documents/${id}/data`, { headers: { "SVC-API-KEY": apiKey } });
}

/** A download the vault refuses as unreadable, with the error line it logs for the operator. */
const unreadable = (id: string) => expectLoggedError(/failed its integrity check/, () => call("GET", `/documents/${id}/data`, { key }));

async function objectsOf(tenantId: string): Promise<number> {
  return (await env.DOCUMENTS.list({ prefix: `documents/${tenantId}/` })).objects.length;
}

async function rowsOf(tenantId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM documents WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>();
  return row!.n;
}

describe("documents", () => {
  it("a 20 MB document round-trips byte for byte, with its metadata and content type", async () => {
    const bytes = documentOf(20_000_000);
    const id = await uploaded(bytes);
    const metadata = await call("GET", `/documents/${id}`, { key });
    expect(metadata.status).toBe(200);
    expect(metadata.body).toMatchObject({
      id,
      tenant_id: tenant.tenantId,
      metadata: { kind: "passport" },
      content_type: "application/pdf",
    });
    const response = await download(key, id);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/pdf");
    const back = new Uint8Array(await response.arrayBuffer());
    expect(back.length).toBe(bytes.length);
    expect(Buffer.compare(back, bytes)).toBe(0);
  }, 120_000);

  it("is unreadable in R2: the stored object holds none of the plaintext, only sealed chunks", async () => {
    const bytes = documentOf(3 * 1024 * 1024 + 5);
    const id = await uploaded(bytes);
    const raw = (await rawObject(tenant.tenantId, id))!;
    const chunks = Math.ceil(bytes.length / DOCUMENTS.chunkBytes);
    expect(raw.length).toBe(bytes.length + 16 * chunks);
    expect(contains(bytes, MARKER)).toBe(true);
    expect(contains(raw, MARKER)).toBe(false);
  });

  it("a document is downloaded as an attachment no page can run: an uploaded HTML page with script stays inert on the vault's origin", async () => {
    const page = new TextEncoder().encode("<html><script>fetch('/applications')</script></html>");
    const response = await upload(key, page, undefined, "text/html");
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: string };
    const download = await SELF.fetch(`${BASE}/documents/${id}/data`, { headers: { "SVC-API-KEY": key } });
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(page);
    expect(download.headers.get("content-type")).toBe("text/html");
    expect(download.headers.get("content-disposition")).toBe("attachment");
    expect(download.headers.get("content-security-policy")).toBe("sandbox");
    expect(download.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("an empty document and one of exactly a chunk's size round-trip", async () => {
    for (const size of [0, DOCUMENTS.chunkBytes, 2 * DOCUMENTS.chunkBytes]) {
      const bytes = documentOf(size);
      const id = await uploaded(bytes);
      const back = new Uint8Array(await (await download(key, id)).arrayBuffer());
      expect(Buffer.compare(back, bytes), `${size} bytes`).toBe(0);
    }
  });

  it("a form whose end arrives in reads of its own is read to its end: the closing CRLF alone, the delimiter split, an epilogue", async () => {
    const bytes = documentOf(3 * DOCUMENTS.chunkBytes + 17);
    const form = new FormData();
    form.append("document", new Blob([bytes], { type: "application/pdf" }), "passport.pdf");
    const encoded = new Response(form);
    const contentType = encoded.headers.get("content-type")!;
    const whole = new Uint8Array(await encoded.arrayBuffer());
    const boundary = /boundary=(.+)$/.exec(contentType)![1]!;
    const delimiterEnd = whole.length - 2; // the form ends "\r\n--boundary--\r\n"
    const epilogue = new TextEncoder().encode("an epilogue, which means nothing\r\n");
    const ways: [string, Uint8Array[]][] = [
      ["the closing CRLF alone", [whole.subarray(0, delimiterEnd), whole.subarray(delimiterEnd)]],
      [
        "the close delimiter split in two",
        [
          whole.subarray(0, delimiterEnd - boundary.length),
          whole.subarray(delimiterEnd - boundary.length, delimiterEnd - 1),
          whole.subarray(delimiterEnd - 1),
        ],
      ],
      ["an epilogue in reads of its own", [whole, epilogue, epilogue]],
    ];
    for (const [way, reads] of ways) {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const read of reads) controller.enqueue(read.slice());
          controller.close();
        },
      });
      const length = reads.reduce((sum, read) => sum + read.length, 0);
      const response = await SELF.fetch(`${BASE}/documents`, {
        method: "POST",
        headers: { "SVC-API-KEY": key, "content-type": contentType, "content-length": String(length) },
        body,
      });
      const reply = (await response.json()) as { id: string };
      expect(response.status, `${way}: ${JSON.stringify(reply)}`).toBe(201);
      const back = new Uint8Array(await (await download(key, reply.id)).arrayBuffer());
      expect(Buffer.compare(back, bytes), way).toBe(0);
    }
  });

  it("a changed byte in the stored object is a 500 that answers none of it", async () => {
    const bytes = documentOf(6 * DOCUMENTS.chunkBytes);
    const id = await uploaded(bytes);
    const raw = (await rawObject(tenant.tenantId, id))!;
    // In the first chunk: refused before the answer starts.
    const first = raw.slice();
    first[100]! ^= 1;
    await env.DOCUMENTS.put(objectKeyOf(tenant.tenantId, id), first);
    const refused = await unreadable(id);
    expectProblem(refused, 500);
    expect(refused.body.detail).toMatch(/integrity/);
  });

  it("a stored object cut at a chunk boundary, or with its chunks swapped, does not open", async () => {
    const bytes = documentOf(4 * DOCUMENTS.chunkBytes + 7);
    const id = await uploaded(bytes);
    const raw = (await rawObject(tenant.tenantId, id))!;
    const sealed = DOCUMENTS.chunkBytes + 16;
    // Cut after its first chunk, which was not sealed as the final one.
    await env.DOCUMENTS.put(objectKeyOf(tenant.tenantId, id), raw.slice(0, sealed));
    expectProblem(await unreadable(id), 500);
    const swapped = raw.slice();
    swapped.set(raw.subarray(sealed, 2 * sealed), 0);
    swapped.set(raw.subarray(0, sealed), sealed);
    await env.DOCUMENTS.put(objectKeyOf(tenant.tenantId, id), swapped);
    expectProblem(await unreadable(id), 500);
  });

  it("another document's object under this document's id does not open", async () => {
    const one = await uploaded(documentOf(1000));
    const other = await uploaded(documentOf(1000));
    await env.DOCUMENTS.put(objectKeyOf(tenant.tenantId, one), (await rawObject(tenant.tenantId, other))!);
    expectProblem(await unreadable(one), 500);
  });

  it("an upload over the limit is a 413 and leaves no object and no row", async () => {
    const before = [await objectsOf(tenant.tenantId), await rowsOf(tenant.tenantId)];
    const response = await upload(key, documentOf(DOCUMENTS.maxBytes + 1));
    expect(response.status).toBe(413);
    expect(((await response.json()) as { detail: string }).detail).toMatch(String(DOCUMENTS.maxBytes));
    expect([await objectsOf(tenant.tenantId), await rowsOf(tenant.tenantId)]).toEqual(before);
  }, 120_000);

  it("a refused form (bad metadata, no document, an unknown part, not multipart) stores nothing", async () => {
    const before = [await objectsOf(tenant.tenantId), await rowsOf(tenant.tenantId)];
    const badMetadata = await upload(key, documentOf(100_000), '{"metadata":{"n":1}}');
    expect(badMetadata.status).toBe(400);
    expect(await badMetadata.text()).toContain("request.metadata");
    expect((await upload(key, documentOf(10), "not json")).status).toBe(400);
    const notUtf8 = new FormData();
    notUtf8.append("document", new Blob([documentOf(10)]));
    notUtf8.append("request", new Blob([new Uint8Array([0x7b, 0xc3, 0x28, 0x7d])]));
    const refusedText = await SELF.fetch(`${BASE}/documents`, { method: "POST", headers: { "SVC-API-KEY": key }, body: notUtf8 });
    expect(refusedText.status).toBe(400);
    expect(await refusedText.text()).toContain("must be valid UTF-8");
    expect((await upload(key, documentOf(10), '{"unknown":1}')).status).toBe(400);
    const noDocument = new FormData();
    noDocument.append("request", "{}");
    const missing = await SELF.fetch(`${BASE}/documents`, { method: "POST", headers: { "SVC-API-KEY": key }, body: noDocument });
    expect(missing.status).toBe(400);
    const extra = new FormData();
    extra.append("document", new Blob([documentOf(10)]));
    extra.append("other", "x");
    expect((await SELF.fetch(`${BASE}/documents`, { method: "POST", headers: { "SVC-API-KEY": key }, body: extra })).status).toBe(400);
    const truncated = await SELF.fetch(`${BASE}/documents`, {
      method: "POST",
      headers: { "SVC-API-KEY": key, "content-type": "multipart/form-data; boundary=abc" },
      body: '--abc\r\ncontent-disposition: form-data; name="document"\r\n\r\nunfinished',
    });
    expect(truncated.status).toBe(400);
    expectProblem(await call("POST", "/documents", { key, body: { document: "x" } }), 415);
    expect([await objectsOf(tenant.tenantId), await rowsOf(tenant.tenantId)]).toEqual(before);
  });

  it("each route needs its own permission: documents:read never reveals the bytes", async () => {
    const id = await uploaded(documentOf(10));
    const reader = (await createApplication(tenant, { type: "private", permissions: ["documents:read"] })).key;
    expect((await call("GET", `/documents/${id}`, { key: reader })).status).toBe(200);
    expectProblem(await call("GET", `/documents/${id}/data`, { key: reader }), 403);
    expectProblem(await call("DELETE", `/documents/${id}`, { key: reader }), 403);
    expect((await upload(reader, documentOf(10))).status).toBe(403);
    const management = (await call("GET", `/documents/${id}`, { key: tenant.managementKey })).status;
    expect(management).toBe(403);
  });

  it("another tenant's document is a 404 on every route, and stays", async () => {
    const id = await uploaded(documentOf(10));
    const intruder = await seedTenant();
    const intruderKey = (await createApplication(intruder, { type: "private", permissions: ALL })).key;
    expectProblem(await call("GET", `/documents/${id}`, { key: intruderKey }), 404);
    expectProblem(await call("GET", `/documents/${id}/data`, { key: intruderKey }), 404);
    expectProblem(await call("DELETE", `/documents/${id}`, { key: intruderKey }), 404);
    expect((await download(key, id)).status).toBe(200);
  });

  it("deleting a document deletes its object", async () => {
    const id = await uploaded(documentOf(10));
    expect(await rawObject(tenant.tenantId, id)).not.toBeNull();
    expect((await call("DELETE", `/documents/${id}`, { key })).status).toBe(204);
    expect(await rawObject(tenant.tenantId, id)).toBeNull();
    expectProblem(await call("GET", `/documents/${id}`, { key }), 404);
    expectProblem(await call("DELETE", `/documents/${id}`, { key }), 404);
  });

  it("a data-key rotation re-seals the document's data key, not its bytes, and the document still reads", async () => {
    const rotating = await seedTenant();
    const rotatingKey = (await createApplication(rotating, { type: "private", permissions: ALL })).key;
    const bytes = documentOf(150_000);
    const { id } = (await (await upload(rotatingKey, bytes)).json()) as { id: string };
    const sealed = () => env.DB.prepare("SELECT data_key_ciphertext AS k FROM documents WHERE id = ?").bind(id).first<{ k: string }>();
    const before = (await sealed())!.k;
    const rawBefore = (await rawObject(rotating.tenantId, id))!;
    expect(before).toMatch(/^v1\./);
    expect((await call("POST", `/tenants/${rotating.tenantId}/rotation`, { headers: operator })).status).toBe(202);
    const deadline = Date.now() + 30_000;
    while ((await call("GET", `/tenants/${rotating.tenantId}/rotation`, { headers: operator })).body.state !== "done") {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await sealed())!.k).toMatch(/^v2\./);
    expect(Buffer.compare((await rawObject(rotating.tenantId, id))!, rawBefore)).toBe(0);
    const back = new Uint8Array(await (await download(rotatingKey, id)).arrayBuffer());
    expect(Buffer.compare(back, bytes)).toBe(0);
  });

  it("after crypto-shredding its tenant a document cannot be decrypted, and the cron removes its object", async () => {
    const doomed = await seedTenant();
    const doomedKey = (await createApplication(doomed, { type: "private", permissions: ALL })).key;
    const response = await upload(doomedKey, documentOf(200_000));
    const { id } = (await response.json()) as { id: string };
    const sealedKey = await env.DB.prepare("SELECT data_key_ciphertext AS k FROM documents WHERE id = ?").bind(id).first<{ k: string }>();
    expect(sealedKey?.k).toMatch(/^v\d+\./);
    expect((await call("DELETE", `/tenants/${doomed.tenantId}`, { headers: operator })).status).toBe(200);
    // The tenant's keys, the only ones that unwrap the document's data key, are gone, and so is its row.
    const keys = await env.DB.prepare("SELECT count(*) AS n FROM tenant_keys WHERE tenant_id = ?")
      .bind(doomed.tenantId)
      .first<{ n: number }>();
    expect(keys!.n).toBe(0);
    expect(await rowsOf(doomed.tenantId)).toBe(0);
    expect((await download(doomedKey, id)).status).toBe(401);
    await runCron();
    expect(await objectsOf(doomed.tenantId)).toBe(0);
  });
});
