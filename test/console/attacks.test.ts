import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/crypto/secrets";
import { logEntries } from "../support/audit";
import { callConfigured } from "../support/configured";
import { ageSessions, callWithCookie, consoleSessionRows, FOREIGN_ORIGIN, OWN_ORIGIN, signIn } from "../support/console";
import { call, createApplication, dumpDatabase, expectProblem, type Reply, rowCounts, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant, TOKEN_PERMISSIONS } from "../support/tokens";

/*
 * Attacks on console sessions (issue 37): another site's page riding the cookie (CSRF), page script
 * reading it, a session outliving its key, a public key signing in, one tenant's session reaching
 * another's ids, an ended session, and the token or key leaking through storage, logs or errors.
 */

describe("attacks on console sessions", () => {
  it("another origin's POST, PUT or DELETE with the cookie is a 403 and changes nothing", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.managementKey);
    const victim = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const before = await rowCounts();
    const attempts: [string, string, unknown][] = [
      ["POST", "/applications", { name: "attacker's", type: "management", permissions: ["application:create"] }],
      ["PUT", `/applications/${victim.id}`, { name: "renamed", permissions: TOKEN_PERMISSIONS }],
      ["DELETE", `/applications/${victim.id}`, undefined],
      ["POST", `/applications/${victim.id}/regenerate`, {}],
      ["DELETE", "/console/session", undefined],
    ];
    for (const origin of [FOREIGN_ORIGIN, "http://vault.test.attacker.example", "null", null]) {
      for (const [method, path, body] of attempts) {
        const reply = await callWithCookie(session, method, path, { origin, body });
        expect(expectProblem(reply, 403).detail, `${method} ${path} from ${origin}`).toMatch(/Origin/);
      }
    }
    expect(await rowCounts()).toEqual(before);
    const still = await call("GET", `/applications/${victim.id}`, { key: tenant.managementKey });
    expect(still.body.name).toBe("private app");
    // The session itself is untouched, and the same requests from the vault's own page go through.
    expect((await callWithCookie(session, "GET", "/console/session", { origin: FOREIGN_ORIGIN })).status).toBe(200);
    expect((await callWithCookie(session, "DELETE", `/applications/${victim.id}`)).status).toBe(204);
  });

  it("another origin's form post with the cookie changes nothing", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const before = await rowCounts();
    const reply = await callWithCookie(session, "POST", "/tokens", {
      origin: FOREIGN_ORIGIN,
      raw: "type=token&data=planted",
      contentType: "application/x-www-form-urlencoded",
    });
    expectProblem(reply, 403);
    expect(await rowCounts()).toEqual(before);
  });

  it("another origin's page cannot sign a visitor in", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/console/session", { body: { api_key: tenant.managementKey }, headers: { origin: FOREIGN_ORIGIN } });
    expectProblem(reply, 403);
    expect(reply.headers.get("set-cookie")).toBeNull();
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("the cookie is HttpOnly and SameSite=Strict, for the whole vault", async () => {
    const tenant = await seedTenant();
    const { setCookie } = await signIn(tenant.managementKey);
    const attributes = setCookie.split(";").map((part) => part.trim());
    expect(attributes).toContain("HttpOnly");
    expect(attributes).toContain("SameSite=Strict");
    expect(attributes).toContain("Path=/");
    expect(attributes).toContain("Secure");
  });

  it("a session outliving its revoked key answers 401, and its row goes", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    expect((await callWithCookie(session, "GET", "/console/session")).status).toBe(200);
    const keys = await call("GET", `/applications/${tenant.applicationId}/keys`, { key: tenant.managementKey });
    const revoked = await call("DELETE", `/applications/${tenant.applicationId}/keys/${keys.body[0].id}`, { key: tenant.managementKey });
    expect(revoked.status).toBe(204);
    expectProblem(await callWithCookie(session, "GET", "/tokens"), 401);
    expectProblem(await callWithCookie(session, "GET", "/console/session"), 401);
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("a session whose key was replaced (regenerate) answers 401", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const regenerated = await call("POST", `/applications/${tenant.applicationId}/regenerate`, { key: tenant.managementKey, body: {} });
    expect(regenerated.status).toBe(200);
    expectProblem(await callWithCookie(session, "POST", "/tokens", { body: { type: "token", data: "x" } }), 401);
  });

  it("a session outliving its deleted application answers 401", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    expect((await call("DELETE", `/applications/${tenant.applicationId}`, { key: tenant.managementKey })).status).toBe(204);
    expectProblem(await callWithCookie(session, "GET", "/tokens"), 401);
  });

  it("a session outliving its key's expiry answers 401", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, { type: "private", permissions: TOKEN_PERMISSIONS });
    const created = await call("POST", `/applications/${application.id}/keys`, {
      key: tenant.managementKey,
      body: { expires_at: new Date(Date.now() + 60_000).toISOString() },
    });
    expect(created.status, created.text).toBe(201);
    const session = await signIn(created.body.key);
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, created.body.id)
      .run();
    // The key's lookup is reused for up to CREDENTIAL_CACHE_TTL_MS, as the key's own is.
    await vi.waitFor(async () => expectProblem(await callWithCookie(session, "GET", "/tokens"), 401), { timeout: 5_000 });
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("a public key cannot sign in", async () => {
    const tenant = await seedTenant();
    const page = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
    const reply = await call("POST", "/console/session", { body: { api_key: page.key }, headers: { origin: OWN_ORIGIN } });
    expect(expectProblem(reply, 403).detail).toMatch(/public/);
    expect(reply.headers.get("set-cookie")).toBeNull();
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("an unknown key cannot sign in, and is not echoed", async () => {
    const reply = await call("POST", "/console/session", { body: { api_key: "key_not-a-key-of-anyone" } });
    expectProblem(reply, 401);
    expect(reply.text).not.toContain("not-a-key-of-anyone");
  });

  it("a session of tenant A cannot reach tenant B's ids", async () => {
    const a = await seedTokenTenant();
    const b = await seedTokenTenant();
    const token = await createToken(b.key, { type: "token", data: "b's" });
    const sessions = [await signIn(a.key), await signIn(a.managementKey)];
    const before = await rowCounts();
    for (const session of sessions) {
      for (const [method, path] of [
        ["GET", `/tokens/${token.id}`],
        ["DELETE", `/tokens/${token.id}`],
        ["GET", `/applications/${b.applicationId}`],
        ["DELETE", `/applications/${b.applicationId}`],
      ] as const) {
        const reply = await callWithCookie(session, method, path);
        expect([403, 404], `${method} ${path}: ${reply.text}`).toContain(reply.status);
        if (reply.status === 403) expect(reply.body.detail).toMatch(/requires the permission/);
      }
    }
    expect(await rowCounts()).toEqual(before);
    expect((await call("GET", `/tokens/${token.id}`, { key: b.key })).status).toBe(200);
  });

  it("a session unused past its idle lifetime answers 401, and so does one past its absolute end", async () => {
    const tenant = await seedTenant();
    const idle = await signIn(tenant.managementKey);
    await ageSessions(tenant.tenantId, 31 * 60_000);
    expect(expectProblem(await callWithCookie(idle, "GET", "/applications"), 401).detail).toMatch(/ended/);
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);

    const capped = await signIn(tenant.managementKey);
    const now = Date.now();
    await env.DB.prepare("UPDATE console_sessions SET renewed_at = ?, expires_at = ?, ends_at = ? WHERE tenant_id = ?")
      .bind(now - 2 * 60_000, now - 1, now - 1, tenant.tenantId)
      .run();
    expectProblem(await callWithCookie(capped, "GET", "/console/session"), 401);
  });

  it("the session's token is stored only as its SHA-256 hash, and the key not at all", async () => {
    const tenant = await seedTenant();
    const session = await signIn(tenant.managementKey);
    const [row] = await consoleSessionRows(tenant.tenantId);
    expect(row!.token_hash).toBe(await sha256Hex(session.token));
    const keys = await call("GET", `/applications/${tenant.managementApplicationId}/keys`, { key: tenant.managementKey });
    expect(row!.key_id).toBe(keys.body[0].id);
    const everything = await dumpDatabase();
    expect(everything).not.toContain(session.token);
    expect(everything).not.toContain(session.token.slice(8, 30));
  });

  it("nothing of the key or the token appears in logs, the audit log or error bodies", async () => {
    const tenant = await seedTenant();
    const lines: string[] = [];
    const spies = (["error", "warn", "log", "info", "debug"] as const).map((level) =>
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        lines.push(args.map(String).join(" "));
      }),
    );
    const replies: Reply[] = [];
    let token: string;
    try {
      const session = await signIn(tenant.managementKey);
      token = session.token;
      replies.push(session.reply);
      replies.push(await callWithCookie(session, "POST", "/applications", { origin: FOREIGN_ORIGIN, body: {} }));
      replies.push(await callWithCookie(session, "POST", "/applications", { body: { name: 1 } }));
      replies.push(await callWithCookie(session, "GET", "/applications/not-an-id"));
      replies.push(await callWithCookie({ cookie: `__Host-svc_console=${token}x` }, "GET", "/console/session"));
      replies.push(await call("POST", "/console/session", { body: { api_key: `${tenant.managementKey}x` } }));
      replies.push(await callWithCookie(session, "DELETE", "/console/session"));
      replies.push(await callWithCookie(session, "GET", "/console/session"));
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    const entries = JSON.stringify(await logEntries(tenant, 4));
    const secretParts = [tenant.managementKey, tenant.managementKey.slice(4, 24), token!, token!.slice(8, 30)];
    for (const part of secretParts) {
      expect(lines.join("\n")).not.toContain(part);
      expect(entries).not.toContain(part);
      for (const reply of replies) expect(reply.text).not.toContain(part);
    }
  });

  it("a session's requests count against its key's rate limit", async () => {
    const tenant = await seedTokenTenant();
    const limits = { KEY_RATE_LIMIT: env.LOW_KEY_RATE_LIMIT };
    const windowMs = 10_000;
    const left = windowMs - (Date.now() % windowMs);
    if (left < 4_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const signedIn = await callConfigured(limits, "POST", "/console/session", { body: { api_key: tenant.key } });
    expect(signedIn.status).toBe(201);
    const cookie = /^__Host-svc_console=[^;]+/.exec(signedIn.headers.get("set-cookie") ?? "")![0];
    // The sign-in was one request of the key's five; four more with the key use up the rest.
    for (let i = 0; i < 4; i++) {
      expect((await callConfigured(limits, "GET", "/tokens", { headers: { "SVC-API-KEY": tenant.key } })).status).toBe(200);
    }
    const overLimit = await callConfigured(limits, "GET", "/tokens", { headers: { cookie } });
    expectProblem(overLimit, 429);
  });

  it("a proxy never forwards the session's cookie to its destination, and keeps the caller's other cookies", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const proxy = await createProxy(tenant, { require_auth: false, application: { id: tenant.applicationId } });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      headers: { cookie: `theme=dark; ${session.cookie}; svc_console=${session.token}; lang=en` },
      body: {},
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.text).not.toContain(session.token);
    expect(reply.json.headers.cookie).toBe("theme=dark; lang=en");
  });

  it("a proxy's destination cannot set or replace the session's cookie", async () => {
    const tenant = await seedTokenTenant();
    for (const name of ["svc_console", "__Host-svc_console"]) {
      const setCookie = encodeURIComponent(`${name}=console_planted; Path=/; HttpOnly`);
      const proxy = await createProxy(tenant, { require_auth: false, destination_url: loopback(`/respond?set-cookie=${setCookie}`) });
      const reply = await invoke("GET", "", { proxyKey: proxy.key });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.headers.get("set-cookie") ?? "", name).not.toMatch(/svc_console/i);
    }
  });

  it("a proxy's destination cannot plant the session's cookie as a nameless cookie either", async () => {
    // A browser stores `=svc_console=…` as a cookie with an empty name and sends back its value
    // alone (RFC 6265bis 5.7, 5.8.3): `Cookie: svc_console=…`, which the vault reads as its session.
    const tenant = await seedTokenTenant();
    for (const setter of [
      "=svc_console=console_planted; Path=/",
      " = svc_console=console_planted; Path=/console",
      "=__Host-svc_console=console_planted; Path=/; Secure",
    ]) {
      const proxy = await createProxy(tenant, {
        require_auth: false,
        destination_url: loopback(`/respond?set-cookie=${encodeURIComponent(setter)}`),
      });
      const reply = await invoke("GET", "", { proxyKey: proxy.key });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.headers.get("set-cookie") ?? "", setter).not.toMatch(/svc_console/i);
    }
  });

  it("a second session cookie tossed in by a sibling origin is never chosen over the visitor's own: two are a 401", async () => {
    // A sibling origin of the same site can set `svc_console` for the whole site (Domain=) with a
    // longer Path, which the browser then sends first: the vault would act as the attacker's session
    // (its tenant) while the visitor believes to be signed in as themself, and type data into it.
    const visitor = await seedTokenTenant();
    const attacker = await seedTokenTenant();
    const own = await signIn(visitor.key);
    const tossed = await signIn(attacker.key);
    for (const cookie of [`${tossed.cookie}; ${own.cookie}`, `${own.cookie}; other=1; ${tossed.cookie}`]) {
      const session = await callWithCookie({ cookie }, "GET", "/console/session");
      expect(session.status, session.text).toBe(401);
      const tokens = await callWithCookie({ cookie }, "POST", "/tokens", { body: { type: "token", data: "typed by the visitor" } });
      expect(tokens.status, tokens.text).toBe(401);
      const proxy = await createProxy(attacker);
      const invoked = await invoke("GET", "", { proxyKey: proxy.key, headers: { cookie, origin: OWN_ORIGIN } });
      expect(invoked.status, invoked.text).toBe(401);
    }
    expect((await callWithCookie(own, "GET", "/console/session")).body.tenant_id).toBe(visitor.tenantId);
  });

  it("off loopback a plain svc_console cookie, which a sibling subdomain can set for the whole site, is never read", async () => {
    // A sibling origin's cookie for the whole site carries a Domain, which browsers refuse under the
    // __Host- prefix: it can only be the plain name, which the vault reads on loopback http alone.
    const visitor = await seedTokenTenant();
    const attacker = await seedTokenTenant();
    const own = await signIn(visitor.key);
    expect(own.cookie).toMatch(/^__Host-svc_console=/);
    const tossed = await signIn(attacker.key);
    const plain = `svc_console=${tossed.token}`;
    expectProblem(await callWithCookie({ cookie: plain }, "GET", "/console/session"), 401);
    for (const cookie of [`${plain}; ${own.cookie}`, `${own.cookie}; ${plain}`]) {
      const session = await callWithCookie({ cookie }, "GET", "/console/session");
      expect(session.status, session.text).toBe(200);
      expect(session.body.tenant_id).toBe(visitor.tenantId);
    }
  });

  it("signing in again and again keeps at most 20 sessions of an application, ending the oldest", async () => {
    // Each sign-in wrote a row of the control database that every tenant shares, bounded only by the
    // key's rate limit (1,000 a second) while the cron deletes 1,000 ended rows every 15 minutes.
    const tenant = await seedTokenTenant();
    const sessions: Awaited<ReturnType<typeof signIn>>[] = [];
    for (let i = 0; i < 23; i++) sessions.push(await signIn(tenant.key));
    expect(await consoleSessionRows(tenant.tenantId)).toHaveLength(20);
    for (const ended of sessions.slice(0, 3)) expectProblem(await callWithCookie(ended, "GET", "/console/session"), 401);
    for (const kept of sessions.slice(3)) expect((await callWithCookie(kept, "GET", "/console/session")).status).toBe(200);
  });

  it("a sibling site's page (same site, another origin) cannot make the cookie's GET call a proxy or read a route", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const proxy = await createProxy(tenant);
    const marker = `sibling-${crypto.randomUUID()}`;
    for (const site of ["same-site", "cross-site"]) {
      const invoked = await invoke("GET", `/${marker}`, {
        proxyKey: proxy.key,
        headers: { cookie: session.cookie, "sec-fetch-site": site },
      });
      expect(invoked.status, invoked.text).toBe(403);
      expectProblem(await callWithCookie(session, "GET", "/tokens", { origin: null, headers: { "sec-fetch-site": site } }), 403);
    }
    expect(await destinationSaw(marker)).toBe(0);
    const own = await invoke("GET", `/${marker}`, {
      proxyKey: proxy.key,
      headers: { cookie: session.cookie, "sec-fetch-site": "same-origin" },
    });
    expect(own.status, own.text).toBe(200);
  });
});
