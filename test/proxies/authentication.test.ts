import { describe, expect, it } from "vitest";
import { call, createApplication, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant } from "../support/tokens";

const VISA = "4242424242424242";

describe("proxy invocation: require_auth true (rule 2)", () => {
  it("refuses a request without SVC-API-KEY with proxy_error 401", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { destination_url: loopback("/no-api-key-marker") });
    const problem = expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: {} }), 401);
    expect(problem.detail).toContain("SVC-API-KEY");
    expect(await destinationSaw("no-api-key-marker")).toBe(0);
  });

  it("refuses an unknown API key with proxy_error 401", async () => {
    const proxy = await createProxy(await seedTenant());
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, apiKey: "key_unknown", body: {} }), 401);
  });

  it("refuses another tenant's API key with proxy_error 401, even one holding token:use", async () => {
    const proxy = await createProxy(await seedTenant(), { destination_url: loopback("/foreign-api-key-marker") });
    const foreign = await createApplication(await seedTenant(), { type: "private", permissions: ["token:use"] });
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, apiKey: foreign.key, body: {} }), 401);
    expect(await destinationSaw("foreign-api-key-marker")).toBe(0);
  });

  it("refuses a caller without token:use with proxy_error 403, even when it detokenizes nothing", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { destination_url: loopback("/no-token-use-marker") });
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read"] });
    const problem = expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, apiKey: caller.key, body: {} }), 403);
    expect(problem.detail).toContain("token:use");
    expect(await destinationSaw("no-token-use-marker")).toBe(0);
  });

  it("refuses a management key with proxy_error 403: it cannot hold token:use", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant);
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.managementKey, body: {} }), 403);
  });

  it("detokenizes with the caller's token:use", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const proxy = await createProxy(tenant);
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body: { card: `{{ ${token.id} }}` } });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ card: VISA });
  });

  it("needs token:use on the container of every token it detokenizes", async () => {
    const tenant = await seedTokenTenant();
    const pci = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/pci/"] });
    const pii = await createToken(tenant.key, { type: "social_security_number", data: "123-45-6789", containers: ["/pii/"] });
    const caller = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:use"] }],
    });
    const proxy = await createProxy(tenant, { destination_url: loopback("/per-container") });
    const allowed = await invoke("POST", "", { proxyKey: proxy.key, apiKey: caller.key, body: { card: `{{ ${pci.id} }}` } });
    expect(allowed.status, allowed.text).toBe(200);
    const refused = await invoke("POST", "/refused-container-marker", {
      proxyKey: proxy.key,
      apiKey: caller.key,
      body: { card: `{{ ${pci.id} }}`, ssn: `{{ ${pii.id} }}` },
    });
    expect(expectProxyError(refused, 403).detail).toContain(pii.id);
    expect(await destinationSaw("refused-container-marker")).toBe(0);
  });

  it("needs token:use on every container of a token held in several", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/pci/", "/partners/"] });
    const caller = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:use"] }],
    });
    const proxy = await createProxy(tenant, { destination_url: loopback("/every-container-marker") });
    const refused = await invoke("POST", "", { proxyKey: proxy.key, apiKey: caller.key, body: { card: `{{ ${token.id} }}` } });
    expect(expectProxyError(refused, 403).detail).toContain("/partners/");
    expect(await destinationSaw("every-container-marker")).toBe(0);
  });
});

describe("proxy invocation: require_auth false (rule 2)", () => {
  it("accepts anonymous callers", async () => {
    const proxy = await createProxy(await seedTenant(), { require_auth: false });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { plain: "value" } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.body).toBe('{"plain":"value"}');
  });

  it("detokenizes with the proxy's application", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const user = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: user.id } });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { card: `{{ ${token.id} }}` } });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ card: VISA });
  });

  it("acts with the proxy's application even when the caller sends an API key", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const creatorOnly = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: creatorOnly.id } });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body: { card: `{{ ${token.id} }}` } });
    // The caller's key could use the token; the proxy's public application may not, and is told no more of it than of
    // an unknown id (rule 8): the 400 an unknown reference gets.
    expectProxyError(reply, 400);
  });

  it("refuses references when the proxy has no application, with proxy_error 403", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const proxy = await createProxy(tenant, { require_auth: false, destination_url: loopback("/no-application-marker") });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { card: `{{ ${token.id} }}` } });
    expectProxyError(reply, 403);
    expect(await destinationSaw("no-application-marker")).toBe(0);
  });

  it("refuses references once the proxy's application is deleted, with proxy_error 403", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA });
    const user = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: user.id } });
    expect((await call("DELETE", `/applications/${user.id}`, { key: tenant.managementKey })).status).toBe(204);
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: { card: `{{ ${token.id} }}` } }), 403);
    expect((await invoke("POST", "", { proxyKey: proxy.key, body: { plain: 1 } })).status).toBe(200);
  });

  it("refuses references the proxy's application may not use, with proxy_error 403", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/pci/"] });
    const piiOnly = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/pii/", transform: "reveal", permissions: ["token:use"] }],
    });
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: piiOnly.id } });
    expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: { card: `{{ ${token.id} }}` } }), 403);
  });

  it("cannot reach another tenant's tokens: they do not exist for it (400)", async () => {
    const owner = await seedTokenTenant();
    const token = await createToken(owner.key, { type: "card_number", data: VISA });
    const tenant = await seedTokenTenant();
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: tenant.applicationId } });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { card: `{{ ${token.id} }}` } });
    expect(expectProxyError(reply, 400).detail).toContain(token.id);
    expect(reply.text).not.toContain(VISA);
  });
});
