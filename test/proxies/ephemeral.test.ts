import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { createApplication, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant, VISA } from "../support/tokens";

/** A tenant whose application may do everything with tokens (token:use included). */
async function setUp() {
  const tenant = await seedTokenTenant();
  const send = (
    method: string,
    path: string,
    proxyUrl: string,
    options: { apiKey?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) =>
    invoke(method, path, {
      apiKey: "apiKey" in options ? options.apiKey : tenant.key,
      body: options.body,
      headers: { "SVC-PROXY-URL": proxyUrl, ...options.headers },
    });
  return { tenant, send };
}

describe("ephemeral proxy: /proxy with SVC-PROXY-URL and an API key", () => {
  it("forwards the request to the URL and returns the destination's response", async () => {
    const { send } = await setUp();
    const reply = await send("PUT", "", loopback("/ephemeral"), { body: { hello: "world" } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json).toMatchObject({ method: "PUT", path: "/ephemeral", query: "", body: '{"hello":"world"}' });
  });

  it("returns the destination's status and body unchanged", async () => {
    const { send } = await setUp();
    const reply = await send("GET", "", loopback("/status/418"));
    expect(reply.status).toBe(418);
    expect(reply.json).toMatchObject({ method: "GET", path: "/status/418" });
  });

  it("detokenizes the body and the headers, expressions included", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "token", data: { number: VISA, expiration_month: 11 } });
    const secret = await createToken(tenant.key, { type: "token", data: "partner-secret" });
    const reply = await send("POST", "", loopback(), {
      body: { number: `{{ ${card.id} | json: '$.number' }}`, month: `{{ ${card.id} | json: '$.expiration_month' }}` },
      headers: { authorization: `Bearer {{ ${secret.id} }}` },
    });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ number: VISA, month: "11" });
    expect(reply.json.headers.authorization).toBe("Bearer partner-secret");
  });

  it("appends the sub-path and the query string to the URL, without doubling a trailing slash", async () => {
    const { send } = await setUp();
    const reply = await send("GET", "/charges/42?expand=card&limit=1", loopback("/api/?version=2"));
    expect(reply.json).toMatchObject({ path: "/api/charges/42", query: "?version=2&expand=card&limit=1" });
  });

  it("never forwards the vault's own headers", async () => {
    const { send } = await setUp();
    const reply = await send("GET", "", loopback(), { headers: { "x-kept": "yes" } });
    expect(reply.json.headers["x-kept"]).toBe("yes");
    expect(reply.json.headers).not.toHaveProperty("svc-api-key");
    expect(reply.json.headers).not.toHaveProperty("svc-proxy-url");
  });

  it("refuses a request without SVC-API-KEY with proxy_error 401", async () => {
    const { send } = await setUp();
    const problem = expectProxyError(await send("POST", "", loopback("/ephemeral-no-key-marker"), { apiKey: undefined }), 401);
    expect(problem.detail).toBe("An ephemeral proxy call requires the SVC-API-KEY header");
    expect(await destinationSaw("ephemeral-no-key-marker")).toBe(0);
  });

  it("refuses an unknown API key with proxy_error 401", async () => {
    const { send } = await setUp();
    expectProxyError(await send("POST", "", loopback("/ephemeral-unknown-key-marker"), { apiKey: "key_unknown" }), 401);
    expect(await destinationSaw("ephemeral-unknown-key-marker")).toBe(0);
  });

  it("refuses a caller without token:use with proxy_error 403, even when it detokenizes nothing", async () => {
    const tenant = await seedTenant();
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read", "token:create"] });
    const reply = await invoke("POST", "", {
      apiKey: reader.key,
      headers: { "SVC-PROXY-URL": loopback("/ephemeral-no-use-marker") },
      body: {},
    });
    expect(expectProxyError(reply, 403).detail).toContain("token:use");
    expect(await destinationSaw("ephemeral-no-use-marker")).toBe(0);
  });

  it("needs token:use on the container of every token it detokenizes (proxy_error 403)", async () => {
    const { tenant } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const general = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/general/", transform: "reveal", permissions: ["token:use"] }],
    });
    const reply = await invoke("POST", "", {
      apiKey: general.key,
      headers: { "SVC-PROXY-URL": loopback("/ephemeral-container-marker") },
      body: { card: `{{ ${card.id} }}` },
    });
    expect(expectProxyError(reply, 403).detail).toContain(card.id);
    expect(await destinationSaw("ephemeral-container-marker")).toBe(0);
  });

  it("refuses a destination the egress policy refuses with proxy_error 403, before reading any token", async () => {
    const { send } = await setUp();
    const unknownToken = "00000000-0000-4000-8000-000000000000";
    const reply = await send("POST", "", "http://10.0.0.1/charges", { body: { card: `{{ ${unknownToken} }}` } });
    expect(expectProxyError(reply, 403).detail).toBe("The destination is not allowed: 10.0.0.1 is a private address");
  });

  it("refuses a URL that does not parse with proxy_error 400 naming the header", async () => {
    const { send } = await setUp();
    const problem = expectProxyError(await send("GET", "", "not a url"), 400);
    expect(problem.errors).toEqual({ "headers.svc-proxy-url": ["must be an absolute URL"] });
  });

  it("answers detokenization failures as proxy_error 400", async () => {
    const { send } = await setUp();
    const unknownToken = "00000000-0000-4000-8000-000000000000";
    const reply = await send("POST", "", loopback("/ephemeral-unknown-token-marker"), { body: { card: `{{ ${unknownToken} }}` } });
    expect(expectProxyError(reply, 400).detail).toContain(unknownToken);
    expect(await destinationSaw("ephemeral-unknown-token-marker")).toBe(0);
  });

  it("uses the proxy key when one is sent with SVC-PROXY-URL, and drops the header", async () => {
    const { tenant, send } = await setUp();
    const proxy = await createProxy(tenant, { destination_url: loopback("/configured") });
    const reply = await send("GET", "", loopback("/ephemeral-ignored-marker"), { headers: { "SVC-PROXY-KEY": proxy.key } });
    expect(reply.json.path).toBe("/configured");
    expect(reply.json.headers).not.toHaveProperty("svc-proxy-url");
    expect(await destinationSaw("ephemeral-ignored-marker")).toBe(0);
  });

  it("mentions SVC-PROXY-URL when neither a proxy key nor a URL is sent (proxy_error 401)", async () => {
    const { tenant } = await setUp();
    const problem = expectProxyError(await invoke("GET", "", { apiKey: tenant.key }), 401);
    expect(problem.detail).toBe(
      "A proxy key is required: header SVC-PROXY-KEY or query parameter svc-proxy-key, or SVC-PROXY-URL with SVC-API-KEY for an ephemeral proxy",
    );
  });

  it("is off with EPHEMERAL_PROXY=false: a call without a proxy key is refused with proxy_error 401", async () => {
    const { tenant } = await setUp();
    const reply = await callConfigured({ EPHEMERAL_PROXY: "false" }, "POST", "/proxy", {
      headers: { "SVC-API-KEY": tenant.key, "SVC-PROXY-URL": loopback("/ephemeral-disabled-marker") },
      body: {},
    });
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({
      proxy_error: {
        type: "about:blank",
        title: "Unauthorized",
        status: 401,
        detail: "A proxy key is required: header SVC-PROXY-KEY or query parameter svc-proxy-key",
      },
    });
    expect(await destinationSaw("ephemeral-disabled-marker")).toBe(0);
  });
});
