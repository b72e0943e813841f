import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { BASE, call, createApplication, seedTenant, type Tenant } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback, streamOf } from "../support/proxies";

/** A tenant, a caller allowed to use tokens, and an authenticated proxy to the loopback echo. */
async function setUp(body: Record<string, unknown> = {}) {
  const tenant = await seedTenant();
  const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
  const proxy = await createProxy(tenant, body);
  return { tenant, caller, proxy };
}

async function anonymousProxy(tenant?: Tenant, body: Record<string, unknown> = {}) {
  return createProxy(tenant ?? (await seedTenant()), { require_auth: false, ...body });
}

describe("proxy invocation: choosing the proxy (rule 1)", () => {
  it("chooses the proxy by the SVC-PROXY-KEY header", async () => {
    const { caller, proxy } = await setUp({ destination_url: loopback("/by-header") });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: caller.key, body: { hello: "world" } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json).toMatchObject({ method: "POST", path: "/by-header", body: '{"hello":"world"}' });
  });

  it("chooses the proxy by the svc-proxy-key query parameter, removed before forwarding", async () => {
    const { caller, proxy } = await setUp();
    const reply = await invoke("GET", `?a=1&svc-proxy-key=${proxy.key}&b=2`, { apiKey: caller.key });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.query).toBe("?a=1&b=2");
  });

  it("refuses a request without a proxy key with proxy_error 401", async () => {
    const reply = await invoke("POST", "/no-key-marker", { body: {} });
    expect(expectProxyError(reply, 401).detail).toContain("SVC-PROXY-KEY");
    expect(await destinationSaw("no-key-marker")).toBe(0);
  });

  it("refuses an unknown proxy key with proxy_error 401", async () => {
    const reply = await invoke("POST", "", { proxyKey: "proxy_unknown", body: {} });
    expectProxyError(reply, 401);
  });

  it("refuses the key of a deleted proxy at once", async () => {
    const tenant = await seedTenant();
    const proxy = await anonymousProxy(tenant);
    expect((await invoke("GET", "", { proxyKey: proxy.key })).status).toBe(200);
    expect((await call("DELETE", `/proxies/${proxy.id}`, { key: tenant.managementKey })).status).toBe(204);
    expectProxyError(await invoke("GET", "/deleted-proxy-marker", { proxyKey: proxy.key }), 401);
    expect(await destinationSaw("deleted-proxy-marker")).toBe(0);
  });

  it("keeps the key working when the proxy is updated", async () => {
    const tenant = await seedTenant();
    const proxy = await anonymousProxy(tenant);
    await call("PUT", `/proxies/${proxy.id}`, {
      key: tenant.managementKey,
      body: { name: "moved", destination_url: loopback("/moved"), require_auth: false },
    });
    const reply = await invoke("GET", "", { proxyKey: proxy.key });
    expect(reply.json.path).toBe("/moved");
  });
});

describe("proxy invocation: headers (rule 4)", () => {
  it("forwards the caller's headers meant for the destination", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", "", {
      proxyKey: proxy.key,
      headers: { authorization: "Bearer partner-token", "x-request_id": "r-1", accept: "application/json" },
    });
    expect(reply.json.headers).toMatchObject({
      authorization: "Bearer partner-token",
      "x-request_id": "r-1",
      accept: "application/json",
    });
  });

  it("forwards a header named __proto__ as a header, not as a prototype", async () => {
    const proxy = await anonymousProxy();
    // fromEntries makes __proto__ a member; a literal one would set the object's prototype.
    const headers = Object.fromEntries([
      ["__proto__", "kept"],
      ["x-after", "also"],
    ]);
    const reply = await invoke("GET", "", { proxyKey: proxy.key, headers });
    const raw: string[] = reply.json.raw_headers;
    const arrived = Array.from({ length: raw.length / 2 }, (_, i) => [raw[2 * i]!.toLowerCase(), raw[2 * i + 1]]);
    expect(arrived).toEqual(
      expect.arrayContaining([
        ["__proto__", "kept"],
        ["x-after", "also"],
      ]),
    );
  });

  it("never forwards the vault's own SVC-API-KEY and SVC-PROXY-KEY", async () => {
    const { caller, proxy } = await setUp();
    const reply = await invoke("GET", "", { proxyKey: proxy.key, apiKey: caller.key });
    expect(reply.status).toBe(200);
    expect(reply.json.headers).not.toHaveProperty(["svc-api-key"]);
    expect(reply.json.headers).not.toHaveProperty(["svc-proxy-key"]);
    expect(reply.text).not.toContain(caller.key);
    expect(reply.text).not.toContain(proxy.key);
  });

  it("drops hop-by-hop headers, including those the Connection header names", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", "", {
      proxyKey: proxy.key,
      headers: { "proxy-authorization": "Basic secret", te: "trailers", connection: "x-per-hop", "x-per-hop": "1", "x-kept": "2" },
    });
    expect(reply.json.headers).not.toHaveProperty(["proxy-authorization"]);
    expect(reply.json.headers).not.toHaveProperty(["te"]);
    expect(reply.json.headers).not.toHaveProperty(["x-per-hop"]);
    expect(reply.json.headers["x-kept"]).toBe("2");
  });

  it("drops request headers whose names hold anything but letters, digits, - and _", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", "", {
      proxyKey: proxy.key,
      headers: { "x.dotted": "1", "x!bang": "2", "x~tilde": "3", X_Under_Score: "4", "x-dash-9": "5" },
    });
    expect(reply.json.headers).not.toHaveProperty(["x.dotted"]);
    expect(reply.json.headers).not.toHaveProperty(["x!bang"]);
    expect(reply.json.headers).not.toHaveProperty(["x~tilde"]);
    expect(reply.json.headers).toMatchObject({ x_under_score: "4", "x-dash-9": "5" });
  });

  it("passes the destination's response headers unrestricted", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", "/respond?x.dotted=1&x!bang=2&set-cookie=session%3Dabc&body=ok", { proxyKey: proxy.key });
    expect(reply.headers.get("x.dotted")).toBe("1");
    expect(reply.headers.get("x!bang")).toBe("2");
    expect(reply.headers.get("set-cookie")).toBe("session=abc");
    expect(reply.text).toBe("ok");
  });
});

describe("proxy invocation: path and query (rule 5)", () => {
  it("appends the sub-path after /proxy to the destination's path", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/base/") });
    expect((await invoke("GET", "/v1/charges/ch_1", { proxyKey: proxy.key })).json.path).toBe("/base/v1/charges/ch_1");
    expect((await invoke("GET", "", { proxyKey: proxy.key })).json.path).toBe("/base/");
  });

  it("keeps percent-encoded characters of the sub-path as sent", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/base") });
    expect((await invoke("GET", "/a%2Fb/caf%C3%A9", { proxyKey: proxy.key })).json.path).toBe("/base/a%2Fb/caf%C3%A9");
  });

  it("appends the query string to the destination's own query", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/search?fixed=1") });
    const reply = await invoke("GET", "/more?q=a%20b&q=c", { proxyKey: proxy.key });
    expect(reply.json).toMatchObject({ path: "/search/more", query: "?fixed=1&q=a%20b&q=c" });
  });
});

describe("proxy invocation: the destination's response (rule 7)", () => {
  it("returns the destination's status, headers and body unchanged", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("POST", "/status/418", { proxyKey: proxy.key, body: { a: 1 } });
    expect(reply.status).toBe(418);
    expect(reply.headers.get("x-echo")).toBe("true");
    expect(reply.json).toMatchObject({ method: "POST", path: "/status/418" });
  });

  it("passes the destination's own errors through untouched, not as proxy_error", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", "/status/503", { proxyKey: proxy.key });
    expect(reply.status).toBe(503);
    expect(reply.json).not.toHaveProperty(["proxy_error"]);
    expect(reply.json.path).toBe("/status/503");
  });

  it("returns redirects instead of following them", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", `/redirect?to=${encodeURIComponent(loopback("/followed-redirect-marker"))}`, {
      proxyKey: proxy.key,
    });
    expect(reply.status).toBe(302);
    expect(reply.headers.get("location")).toBe(loopback("/followed-redirect-marker"));
    expect(await destinationSaw("/followed-redirect-marker")).toBe(0);
  });

  it.each(["GET", "POST", "PUT", "PATCH", "DELETE"])("forwards %s with its method", async (method) => {
    const proxy = await anonymousProxy();
    const reply = await invoke(method, "", { proxyKey: proxy.key, ...(method === "GET" ? {} : { body: { m: method } }) });
    expect(reply.json.method).toBe(method);
  });

  it("forwards a body it need not read byte for byte", async () => {
    const proxy = await anonymousProxy();
    const raw = '{ "spaced" :  [1,2 ,3],\n  "unicode": "caf\u00e9" }';
    const reply = await invoke("POST", "", { proxyKey: proxy.key, raw });
    expect(reply.json.body).toBe(raw);
  });

  it("refuses other methods with proxy_error 405", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("OPTIONS", "", { proxyKey: proxy.key });
    expectProxyError(reply, 405);
    expect(reply.headers.get("allow")).toBe("GET, POST, PUT, PATCH, DELETE");
  });

  it("answers proxy_error 408 when the destination does not answer in time", async () => {
    const proxy = await anonymousProxy();
    const reply = await callConfigured({ PROXY_TIMEOUT_MS: "100" }, "GET", "/proxy/slow?ms=1500", {
      headers: { "SVC-PROXY-KEY": proxy.key },
    });
    expect(reply.status).toBe(408);
    expect(reply.body.proxy_error).toMatchObject({ status: 408, detail: expect.stringContaining("100 ms") });
  });

  it("checks the destination against the egress policy again at invocation", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/egress-recheck-marker") });
    const reply = await callConfigured({ ALLOW_INSECURE_DESTINATIONS: "false" }, "GET", "/proxy", {
      headers: { "SVC-PROXY-KEY": proxy.key },
    });
    expect(reply.status).toBe(403);
    expect(reply.body.proxy_error.detail).toContain("127.0.0.1");
    expect(await destinationSaw("egress-recheck-marker")).toBe(0);
  });

  it("answers proxy_error 413 for a body over 1 MB, without forwarding it", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/too-large-marker") });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, raw: "x".repeat(1024 * 1024 + 1), contentType: "text/plain" });
    expectProxyError(reply, 413);
    expect(await destinationSaw("too-large-marker")).toBe(0);
  });

  it("answers proxy_error 413 for a body streamed without a length past 1 MB, without forwarding it", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/streamed-too-large-marker") });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, raw: streamOf(1024 * 1024 + 1), contentType: "text/plain" });
    expectProxyError(reply, 413);
    expect(await destinationSaw("streamed-too-large-marker")).toBe(0);
  });

  it("refuses HEAD as proxy_error 405 without a body, and answers a path that spells /proxy with escapes as no proxy call", async () => {
    const proxy = await anonymousProxy(undefined, { destination_url: loopback("/spelled-marker") });
    const head = await SELF.fetch(`${BASE}/proxy`, { method: "HEAD", headers: { "SVC-PROXY-KEY": proxy.key } });
    expect(head.status).toBe(405);
    expect(head.headers.get("allow")).toContain("POST");
    expect(await head.text()).toBe("");
    const escaped = await SELF.fetch(`${BASE}/%70roxy/x`, { method: "POST", headers: { "SVC-PROXY-KEY": proxy.key }, body: "{}" });
    expect(escaped.status).toBe(404);
    expect(await escaped.json()).not.toHaveProperty("proxy_error");
    expect(await destinationSaw("spelled-marker")).toBe(0);
  });

  it("tags every answer with the vault's trace id", async () => {
    const proxy = await anonymousProxy();
    const reply = await invoke("GET", "", { proxyKey: proxy.key, headers: { "SVC-TRACE-ID": "trace-proxy-1" } });
    expect(reply.headers.get("svc-trace-id")).toBe("trace-proxy-1");
  });
});
