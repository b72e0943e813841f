import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, expectProxyError, invoke, loopback } from "../support/proxies";
import { seedTokenTenant } from "../support/tokens";

/*
 * `{P}-PROXY-DESTINATION-STATUS` (the original docs' custom proxy header): the status the destination
 * answered, on every answer given after the destination answered, and on no other; the vault's
 * value, never the destination's or a transform's.
 */

const HEADER = "svc-proxy-destination-status";
const transform = (statements: string) => `module.exports = async function (req) { ${statements} };`;

async function openProxy(fields: Record<string, unknown> = {}) {
  return createProxy(await seedTenant(), { require_auth: false, ...fields });
}

describe("the destination's status header", () => {
  it("a pre-configured proxy's answer carries the destination's status, whatever it is", async () => {
    const proxy = await openProxy();
    for (const status of [200, 418, 503]) {
      const reply = await invoke("POST", status === 200 ? "" : `/status/${status}`, { proxyKey: proxy.key, body: {} });
      expect(reply.status).toBe(status);
      expect(reply.headers.get(HEADER)).toBe(String(status));
    }
  });

  it("an ephemeral proxy's answer carries it too", async () => {
    const tenant = await seedTokenTenant();
    const reply = await invoke("GET", "", { apiKey: tenant.key, headers: { "SVC-PROXY-URL": loopback("/status/402") } });
    expect(reply.status).toBe(402);
    expect(reply.headers.get(HEADER)).toBe("402");
  });

  it("is the vault's: a header of that name from the destination is replaced", async () => {
    const proxy = await openProxy();
    const reply = await invoke("GET", `/respond?${HEADER}=500&body=ok`, { proxyKey: proxy.key });
    expect(reply.status).toBe(200);
    expect(reply.headers.get(HEADER)).toBe("200");
  });

  it("a response transform's answer carries the destination's status, whatever header the transform returns", async () => {
    const proxy = await openProxy({
      response_transform: { code: transform(`return { body: { ok: true }, headers: { '${HEADER}': '299' } };`) },
    });
    const reply = await invoke("GET", "/status/201", { proxyKey: proxy.key });
    expect(reply.status).toBe(201);
    expect(reply.headers.get(HEADER)).toBe("201");
  });

  it("a proxy_error after the destination answered carries its status, so the caller knows the request reached it", async () => {
    const proxy = await openProxy({ response_transform: { code: transform("throw new Error('partner format changed');") } });
    const reply = await expectLoggedError(/The response transform threw Error$/, () =>
      invoke("POST", "", { proxyKey: proxy.key, body: {} }),
    );
    expectProxyError(reply, 500);
    expect(reply.headers.get(HEADER)).toBe("200");
  });

  it("an answer the destination did not give carries none: a refusal, a reference it may not detokenize, a timeout", async () => {
    const proxy = await openProxy();
    expectProxyError(await invoke("GET", "", { proxyKey: "unknown" }), 401);
    const refused = await invoke("POST", "", { proxyKey: proxy.key, body: { card: "{{ 00000000-0000-4000-8000-000000000000 }}" } });
    expectProxyError(refused, 403);
    const timedOut = await callConfigured({ PROXY_TIMEOUT_MS: "100" }, "GET", "/proxy/slow?ms=1500", {
      headers: { "SVC-PROXY-KEY": proxy.key },
    });
    expect(timedOut.status).toBe(408);
    for (const reply of [refused, timedOut]) expect(reply.headers.get(HEADER)).toBeNull();
  });

  it("a request transform's own answer carries none, not even a copy of the header it set", async () => {
    const proxy = await openProxy({
      request_transform: {
        code: transform(
          "const { CustomHttpResponseError } = require('@token-vault/errors');" +
            ` throw new CustomHttpResponseError({ status: 402, headers: { '${HEADER}': '200' }, body: { declined: true } });`,
        ),
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: {} });
    expect(reply.status).toBe(402);
    expect(reply.headers.get(HEADER)).toBeNull();
  });

  it("takes the deployment's prefix", async () => {
    const proxy = await openProxy();
    const reply = await callConfigured({ HEADER_PREFIX: "BT" }, "GET", "/proxy/status/409", { headers: { "BT-PROXY-KEY": proxy.key } });
    expect(reply.status).toBe(409);
    expect(reply.headers.get("bt-proxy-destination-status")).toBe("409");
    expect(reply.headers.get(HEADER)).toBeNull();
  });
});
