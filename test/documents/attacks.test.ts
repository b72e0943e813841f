import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, createApplication, seedTenant, type Tenant } from "../support/harness";

/*
 * Attacks on documents (docs/documents.md) the feature's own tests do not make: uploads cut or
 * padded on the way in, and bodies shaped to make the vault work. A chunk altered after the first:
 * test/node/documents-tamper.test.ts.
 */

const ALL = ["documents:create", "documents:read", "documents:reveal", "documents:delete"];

let tenant: Tenant;
let key: string;

beforeAll(async () => {
  tenant = await seedTenant();
  key = (await createApplication(tenant, { type: "private", permissions: ALL })).key;
});

/** `size` bytes that differ chunk from chunk, so a chunk answered in another's place would show. */
function documentOf(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + (i >>> 16)) & 0xff;
  return bytes;
}

/** A hand-made form (boundary `attack`), sent as it is. */
function upload(body: string) {
  return SELF.fetch(`${BASE}/documents`, {
    method: "POST",
    headers: { "SVC-API-KEY": key, "content-type": "multipart/form-data; boundary=attack" },
    body,
  });
}

async function stored(): Promise<[number, number]> {
  const objects = (await env.DOCUMENTS.list({ prefix: `documents/${tenant.tenantId}/` })).objects.length;
  const rows = await env.DB.prepare("SELECT count(*) AS n FROM documents WHERE tenant_id = ?").bind(tenant.tenantId).first<{ n: number }>();
  return [objects, rows!.n];
}

describe("documents under attack", () => {
  it("an upload the client abandons after several MiB leaves no object and no row", async () => {
    const before = await stored();
    const head = new TextEncoder().encode('--attack\r\ncontent-disposition: form-data; name="document"\r\n\r\n');
    const abandon = new AbortController();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // More than one upload part (5 MiB) of the document reaches the bucket before the client gives up.
        if (sent === 0) controller.enqueue(head);
        if (sent >= 7 * 1024 * 1024) return abandon.abort();
        sent += 1024 * 1024;
        controller.enqueue(documentOf(1024 * 1024));
      },
    });
    const outcome = await SELF.fetch(`${BASE}/documents`, {
      method: "POST",
      headers: { "SVC-API-KEY": key, "content-type": "multipart/form-data; boundary=attack" },
      body,
      signal: abandon.signal,
    }).then(
      (response) => response.status,
      () => "abandoned",
    );
    expect(sent).toBeGreaterThan(5 * 1024 * 1024);
    expect(outcome === "abandoned" || (typeof outcome === "number" && outcome >= 400 && outcome < 500), String(outcome)).toBe(true);
    expect(await stored()).toEqual(before);
  });

  it("more than 64 KiB after the form's closing boundary (an epilogue, which means nothing) is refused, storing nothing", async () => {
    const before = await stored();
    const form =
      '--attack\r\ncontent-disposition: form-data; name="document"\r\ncontent-type: text/plain\r\n\r\nhello\r\n--attack--' +
      "x".repeat(200_000);
    const response = await upload(form);
    expect(response.status).toBe(400);
    expect(await stored()).toEqual(before);
  });

  it("a part's content type with parameters or odd characters is kept only as a plain type/subtype", async () => {
    const types: [string, string][] = [
      ["text/plain; charset=utf-8", "text/plain"],
      ['text/html; x="a, text/javascript"', "text/html"],
      ["text/html, application/javascript", "application/octet-stream"],
      ["a".repeat(200), "application/octet-stream"],
    ];
    for (const [sent, kept] of types) {
      const form = `--attack\r\ncontent-disposition: form-data; name="document"\r\ncontent-type: ${sent}\r\n\r\nhello\r\n--attack--\r\n`;
      const response = await upload(form);
      const body = (await response.json()) as { id: string; content_type: string };
      expect(response.status, sent).toBe(201);
      expect(body.content_type, sent).toBe(kept);
      const download = await SELF.fetch(`${BASE}/documents/${body.id}/data`, { headers: { "SVC-API-KEY": key } });
      expect(download.headers.get("content-type"), sent).toBe(kept);
      expect(download.headers.get("content-disposition")).toBe("attachment");
      expect(new TextDecoder().decode(await download.arrayBuffer())).toBe("hello");
    }
  });

  it("a boundary longer than RFC 2046's 70 characters is refused before the body is read: each byte costs a search that long", async () => {
    const before = await stored();
    const boundary = "b".repeat(71);
    const response = await SELF.fetch(`${BASE}/documents`, {
      method: "POST",
      headers: { "SVC-API-KEY": key, "content-type": `multipart/form-data; boundary=${boundary}` },
      body: `--${boundary}\r\ncontent-disposition: form-data; name="document"\r\n\r\nhello\r\n--${boundary}--\r\n`,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("70");
    expect(await stored()).toEqual(before);
    const longest = "b".repeat(70);
    const accepted = await SELF.fetch(`${BASE}/documents`, {
      method: "POST",
      headers: { "SVC-API-KEY": key, "content-type": `multipart/form-data; boundary=${longest}` },
      body: `--${longest}\r\ncontent-disposition: form-data; name="document"\r\n\r\nhello\r\n--${longest}--\r\n`,
    });
    expect(accepted.status).toBe(201);
  });
});
