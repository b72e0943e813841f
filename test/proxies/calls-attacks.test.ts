import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { entryWhere } from "../support/audit";
import { callConfigured } from "../support/configured";
import { BASE, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { readReply } from "../support/reply.mjs";

/*
 * Attacks on /proxy as answered outside the API's router (src/index.ts, src/runtime/proxy-calls.ts,
 * src/proxies/calls.ts): what the middleware used to guarantee must hold without it.
 */

const transform = (statements: string) => `module.exports = async function (req) { ${statements} };`;

/**
 * `total` bytes of "x", streamed in 64 KiB chunks. Past the limit by one byte, so that the vault has
 * read it all when it refuses (a stream cancelled halfway is reported as lost by the sending side).
 */
function streamOf(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      const size = Math.min(64 * 1024, total - sent);
      sent += size;
      controller.enqueue(new Uint8Array(size).fill(0x78));
    },
  });
}

function expectSandboxed(headers: Headers) {
  expect(headers.get("content-security-policy")).toMatch(/(^|,\s*)sandbox($|[;,])/);
  expect(headers.get("x-content-type-options")).toBe("nosniff");
}

describe("/proxy bodies whose length lies", () => {
  it.each([
    ["with Transfer-Encoding (which frames the body, as HTTP/1.1 has it)", { "transfer-encoding": "chunked" }],
    ["alone", {}],
  ])("a Content-Length of 5 on a body one byte past 1 MB, %s, is a 413 and nothing is forwarded", async (_, extra) => {
    const marker = `lying-length-${crypto.randomUUID()}`;
    const proxy = await createProxy(await seedTenant(), { require_auth: false, destination_url: loopback(`/${marker}`) });
    const reply = await readReply(
      await SELF.fetch(`${BASE}/proxy`, {
        method: "POST",
        headers: { "SVC-PROXY-KEY": proxy.key, "content-type": "text/plain", "content-length": "5", ...extra },
        body: streamOf(1024 * 1024 + 1),
      }),
    );
    // Only the start of the text: a forwarded body would be echoed whole.
    expect(reply.status, reply.text.slice(0, 200)).toBe(413);
    expectProxyError({ ...reply, json: JSON.parse(reply.text) }, 413);
    expect(await destinationSaw(marker)).toBe(0);
  });
});

describe("/proxy answers tenant code or a destination chose that HTTP cannot carry", () => {
  it("a transform's CustomHttpResponseError with a header HTTP does not allow is a proxy_error, sandboxed and audited", async () => {
    const tenant = await seedTenant();
    const marker = `bad-header-${crypto.randomUUID()}`;
    const proxy = await createProxy(tenant, {
      require_auth: false,
      destination_url: loopback(`/${marker}`),
      request_transform: {
        code: transform(
          "const { CustomHttpResponseError } = require('@token-vault/errors');" +
            " throw new CustomHttpResponseError({ status: 402, headers: { 'bad name': 'x' }, body: {} });",
        ),
      },
    });
    const traceId = `bad-header-${crypto.randomUUID()}`;
    const reply = await expectLoggedError(/CustomHttpResponseError/, () =>
      invoke("POST", "", { proxyKey: proxy.key, body: {}, headers: { "SVC-TRACE-ID": traceId } }),
    );
    expect(expectProxyError(reply, 500).detail).toContain("header");
    expectSandboxed(reply.headers);
    expect(reply.headers.get("svc-trace-id")).toBe(traceId);
    expect(await destinationSaw(marker)).toBe(0);
    const entry = await entryWhere(tenant, { entity_type: "proxy" }, (candidate) => candidate.trace_id === traceId);
    expect(entry).toMatchObject({ entity_id: proxy.id, operation: "invoke", status: 500, actor_type: "anonymous" });
  });

  it.each(["600", "199"])("a destination answering status %s is a proxy_error 502 that names the status it sent", async (status) => {
    const proxy = await createProxy(await seedTenant(), { require_auth: false });
    const reply = await expectLoggedError(new RegExp(`status ${status}`), () =>
      invoke("GET", `/status/${status}`, { proxyKey: proxy.key }),
    );
    expect(expectProxyError(reply, 502).detail).toContain(status);
    expect(reply.headers.get("svc-proxy-destination-status")).toBe(status);
    expectSandboxed(reply.headers);
  });
});

describe("/proxy on a deployment whose configuration is broken", () => {
  it("answers a proxy_error 500 naming the setting, sandboxed, without its value", async () => {
    const reply = await expectLoggedError(/HEADER_PREFIX/, () =>
      callConfigured({ HEADER_PREFIX: "not a prefix!" }, "POST", "/proxy", { body: {} }),
    );
    expect(reply.status).toBe(500);
    expect(reply.body.proxy_error.detail).toContain("HEADER_PREFIX");
    expect(reply.text).not.toContain("not a prefix!");
    expectSandboxed(reply.headers);
  });
});
