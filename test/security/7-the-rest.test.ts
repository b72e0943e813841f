import { describe, expect, it } from "vitest";
import { call } from "../support/harness";
import { createProxy, invoke, loopback } from "../support/proxies";
import { seedTokenTenant } from "../support/tokens";

/** Rule 7: the smaller gaps. */

describe("rule 7: every API answer carries Cache-Control: no-store", () => {
  it("on success, on a refusal and on an unknown route", async () => {
    const tenant = await seedTokenTenant();
    for (const reply of [
      await call("GET", "/tokens", { key: tenant.key }),
      await call("GET", "/tokens"),
      await call("GET", "/no-such-route", { key: tenant.key }),
      await call("GET", "/health"),
    ]) {
      expect(reply.headers.get("cache-control"), `${reply.status} ${reply.text}`).toBe("no-store");
    }
  });

  it("a /proxy answer is the destination's own and is left unchanged", async () => {
    const tenant = await seedTokenTenant();
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: tenant.applicationId },
      destination_url: loopback("/respond?cache-control=max-age%3D60"),
    });
    const reply = await invoke("GET", "", { proxyKey: proxy.key });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("cache-control")).toBe("max-age=60");
  });
});

describe("rule 7: the vault's own headers are never forwarded to a destination", () => {
  it("trace id, idempotency key and consistency bookmark stay behind", async () => {
    const tenant = await seedTokenTenant();
    const proxy = await createProxy(tenant, { require_auth: true });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      headers: {
        "SVC-TRACE-ID": "trace-for-the-vault",
        "SVC-IDEMPOTENCY-KEY": "idempotency-for-the-vault",
        "SVC-CONSISTENCY-BOOKMARK": "00000000-00000000-00000000-00000000000000000000000000000000",
        "x-partner": "forwarded",
      },
      body: {},
    });
    expect(reply.status, reply.text).toBe(200);
    const forwarded = Object.keys(reply.json.headers);
    expect(forwarded).toContain("x-partner");
    expect(forwarded.filter((name) => name.startsWith("svc-"))).toEqual([]);
  });
});
