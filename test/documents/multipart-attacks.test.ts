import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, createApplication, seedTenant, type Tenant } from "../support/harness";

/*
 * POST /documents' multipart parsing attacked with forms no browser sends (docs/documents.md): a
 * preamble, oversized part headers, repeated and nameless parts, thousands of parts, and a form
 * that arrives one byte per read. Each is a clear 4xx that keeps nothing, or is read whole.
 */

const ALL = ["documents:create", "documents:read", "documents:reveal", "documents:delete"];

let tenant: Tenant;
let key: string;

beforeAll(async () => {
  tenant = await seedTenant();
  key = (await createApplication(tenant, { type: "private", permissions: ALL })).key;
});

const part = (name: string, content: string, headers = "") =>
  `--attack\r\ncontent-disposition: form-data; name="${name}"\r\n${headers}\r\n${content}\r\n`;
const CLOSE = "--attack--\r\n";

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
