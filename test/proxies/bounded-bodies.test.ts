import { describe, expect, it } from "vitest";
import { expectLoggedError } from "../support/logs";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant } from "../support/tokens";

/*
 * /proxy reads its own body (it is not an API route), under the same rules: JSON nested at most
 * 32 levels and text with references valid UTF-8, refused with a 400 proxy_error before any token is
 * read or anything is forwarded. A body without references is still forwarded byte for byte.
 */

const DEPTH = 10_000;
const LIMIT = "must not nest arrays and objects deeper than 32 levels";
const encoder = new TextEncoder();

async function proxiedTenant(proxy: Record<string, unknown> = {}) {
  const tenant = await seedTokenTenant();
  const token = await createToken(tenant.key, { type: "token", data: "secret-value" });
  const { key } = await createProxy(tenant, proxy);
  return { tenant, token, proxyKey: key };
}

describe("bounded proxy bodies", () => {
  for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
    it(`${method} /proxy with a JSON body ${DEPTH} levels deep holding a reference is a 400 naming the limit`, async () => {
      const { tenant, token, proxyKey } = await proxiedTenant();
      const marker = `deep-${method.toLowerCase()}-${crypto.randomUUID()}`;
      const raw = `${"[".repeat(DEPTH)}"{{ ${token.id} }}"${"]".repeat(DEPTH)}`;
      const reply = await invoke(method, `/${marker}`, { proxyKey, apiKey: tenant.key, raw });
      expect(expectProxyError(reply, 400).detail).toContain(LIMIT);
      expect(await destinationSaw(marker)).toBe(0);
    });
  }

  it("accepts 32 levels", async () => {
    const { tenant, token, proxyKey } = await proxiedTenant();
    const raw = `${"[".repeat(32)}"{{ ${token.id} }}"${"]".repeat(32)}`;
    const reply = await invoke("POST", "/", { proxyKey, apiKey: tenant.key, raw });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.body).toBe(`${"[".repeat(32)}"secret-value"${"]".repeat(32)}`);
  });

  it("refuses invalid UTF-8 in a JSON body with a reference", async () => {
    const { tenant, token, proxyKey } = await proxiedTenant();
    const marker = `utf8-json-${crypto.randomUUID()}`;
    const raw = new Uint8Array([...encoder.encode(`{"a":"{{ ${token.id} }}","b":"`), 0xc3, 0x28, ...encoder.encode('"}')]);
    const reply = await invoke("POST", `/${marker}`, { proxyKey, apiKey: tenant.key, raw });
    expect(expectProxyError(reply, 400).detail).toContain("is not valid UTF-8");
    expect(await destinationSaw(marker)).toBe(0);
  });

  it("refuses invalid UTF-8 in a text body with a reference", async () => {
    const { tenant, token, proxyKey } = await proxiedTenant();
    const marker = `utf8-text-${crypto.randomUUID()}`;
    const raw = new Uint8Array([...encoder.encode(`card={{ ${token.id} }} `), 0xff, 0xfe]);
    const reply = await invoke("POST", `/${marker}`, { proxyKey, apiKey: tenant.key, raw, contentType: "text/plain" });
    expect(expectProxyError(reply, 400).detail).toContain("must be valid UTF-8");
    expect(await destinationSaw(marker)).toBe(0);
  });

  it("forwards a body without references, or a binary one, byte for byte, invalid UTF-8 included", async () => {
    const { tenant, proxyKey } = await proxiedTenant();
    const raw = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]);
    const reply = await invoke("POST", "/", { proxyKey, apiKey: tenant.key, raw, contentType: "application/octet-stream" });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.body).toBe(new TextDecoder().decode(raw));
  });

  it("a destination answering JSON nested too deep for the response transform is a 502 naming the limit", async () => {
    const deep = `${"[".repeat(2000)}1${"]".repeat(2000)}`;
    const { tenant, proxyKey } = await proxiedTenant({
      destination_url: loopback("/respond"),
      response_transform: { code: "module.exports = async (req) => ({ body: req.args.body, headers: {} });" },
    });
    const query = `?content-type=application/json&body=${encodeURIComponent(deep)}`;
    const reply = await expectLoggedError(/response must not nest/, () => invoke("GET", query, { proxyKey, apiKey: tenant.key }));
    expect(expectProxyError(reply, 502).detail).toContain(LIMIT);
  });
});
