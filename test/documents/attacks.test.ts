import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, createApplication, seedTenant, type Tenant } from "../support/harness";

/*
 * Attacks on documents (docs/documents.md) the feature's own tests do not make: uploads cut or
 * padded on the way in, bodies shaped to make the vault work, and multipart forms no browser sends
 * (a preamble, oversized part headers, repeated and nameless parts, thousands of parts, a form that
 * arrives one byte per read): each a clear 4xx that keeps nothing, or read whole. A chunk altered
 * after the first: test/node/documents-tamper.test.ts.
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

const part = (name: string, content: string, headers = "") =>
  `--attack\r\ncontent-disposition: form-data; name="${name}"\r\n${headers}\r\n${content}\r\n`;
const CLOSE = "--attack--\r\n";

/** A hand-made form (boundary `attack`), sent as it is. */
function upload(body: BodyInit) {
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

/** The refusal's status and problem detail, with nothing stored by it. */
async function refused(body: BodyInit): Promise<{ status: number; detail: string }> {
  const before = await stored();
  const response = await upload(body);
  const problem = (await response.json()) as { detail: string };
  expect(await stored()).toEqual(before);
  return { status: response.status, detail: problem.detail };
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

describe("multipart forms no browser sends", () => {
  it("a preamble before the first boundary is a 400 that keeps nothing", async () => {
    const reply = await refused(`a preamble\r\n${part("document", "hello")}${CLOSE}`);
    expect(reply.status).toBe(400);
    expect(reply.detail).toMatch(/multipart/);
  });

  it("a part's headers over 8 KiB are a 400 that keeps nothing, whether in one read or many", async () => {
    const long = `x-padding: ${"p".repeat(9 * 1024)}\r\n`;
    expect((await refused(`${part("document", "hello", long)}${CLOSE}`)).status).toBe(400);
    const endless = `--attack\r\ncontent-disposition: form-data; name="document"\r\nx-padding: ${"p".repeat(64 * 1024)}`;
    expect((await refused(endless)).status).toBe(400);
  });

  it("a second document or request part, and a part without a name, are a 400 that keeps nothing", async () => {
    for (const form of [
      `${part("document", "one")}${part("document", "two")}${CLOSE}`,
      `${part("request", "{}")}${part("request", "{}")}${part("document", "hello")}${CLOSE}`,
      `--attack\r\ncontent-type: text/plain\r\n\r\nhello\r\n${CLOSE}`,
    ]) {
      expect((await refused(form)).status, form).toBe(400);
    }
  });

  it("thousands of parts are refused at the first that is not the form's, keeping nothing", async () => {
    const form = `${part("document", "hello")}${part("x", "").repeat(20_000)}${CLOSE}`;
    const reply = await refused(form);
    expect(reply.status).toBe(400);
    expect(reply.detail).not.toMatch(/x{20}/);
  });

  it("a form sent one byte per write is read whole: the document round-trips", async () => {
    const content = "one byte at a time, boundary-like text included: --attack, \r\n--attac";
    const bytes = new TextEncoder().encode(`${part("request", '{"metadata":{"kind":"slow"}}')}${part("document", content)}${CLOSE}`);
    let at = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at === bytes.length) controller.close();
        else controller.enqueue(bytes.slice(at, ++at));
      },
    });
    const response = await SELF.fetch(`${BASE}/documents`, {
      method: "POST",
      headers: {
        "SVC-API-KEY": key,
        "content-type": "multipart/form-data; boundary=attack",
        "content-length": String(bytes.length),
      },
      body,
    });
    const created = (await response.json()) as { id: string; metadata: Record<string, string> };
    expect(response.status, JSON.stringify(created)).toBe(201);
    expect(created.metadata).toEqual({ kind: "slow" });
    const download = await SELF.fetch(`${BASE}/documents/${created.id}/data`, { headers: { "SVC-API-KEY": key } });
    expect(await download.text()).toBe(content);
  });
});
