import { describe, expect, it } from "vitest";
import { seedTenant } from "../support/harness";
import { createProxy, expectProxyError, invoke, loopback } from "../support/proxies";

/*
 * The vault's origin serves the elements' frames, and a page on that origin could read what they
 * gather (their BroadcastChannel) or act as them. A proxy answers with its destination's response,
 * which any tenant chooses: it must never run as a page of the vault's origin. Every answer of
 * /proxy is sandboxed (no script, an opaque origin) and may not be sniffed into another type.
 */

const PAGE = "<!doctype html><script>new BroadcastChannel('token-vault-elements/x').postMessage('read')</script>";

function expectSandboxed(headers: Headers) {
  expect(headers.get("content-security-policy")).toMatch(/(^|,\s*)sandbox($|[;,])/);
  expect(headers.get("x-content-type-options")).toBe("nosniff");
}

describe("proxy answers cannot run script on the vault's origin", () => {
  it("a destination's text/html page with a script comes back sandboxed and not sniffable", async () => {
    const destination = loopback(`/respond?content-type=text/html&body=${encodeURIComponent(PAGE)}`);
    const proxy = await createProxy(await seedTenant(), { require_auth: false, destination_url: destination });
    const reply = await invoke("GET", "", { proxyKey: proxy.key });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toBe("text/html");
    expect(reply.text).toBe(PAGE);
    expectSandboxed(reply.headers);
  });

  it("keeps the destination's own policy and adds the sandbox to it", async () => {
    const destination = loopback(`/respond?content-type=text/html&content-security-policy=${encodeURIComponent("img-src 'none'")}`);
    const proxy = await createProxy(await seedTenant(), { require_auth: false, destination_url: destination });
    const reply = await invoke("GET", "", { proxyKey: proxy.key });
    expect(reply.headers.get("content-security-policy")).toContain("img-src 'none'");
    expectSandboxed(reply.headers);
  });

  it("the vault's own refusals on /proxy are sandboxed too", async () => {
    const refused = await invoke("GET", "", { proxyKey: "not-a-proxy-key" });
    expectProxyError(refused, 401);
    expectSandboxed(refused.headers);
  });
});
