import { env, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { CONSOLE_SESSIONS } from "../../src/limits";
import { logEntries } from "../support/audit";
import { callConfigured } from "../support/configured";
import { ageSessions, callWithCookie, consoleSessionRows, OWN_ORIGIN, signIn } from "../support/console";
import { dataDatabaseOf } from "../support/context";
import { runCron } from "../support/cron";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, invoke } from "../support/proxies";
import { createToken, seedTokenTenant, TOKEN_PERMISSIONS } from "../support/tokens";

/*
 * Console sessions (issue 37): an API key is exchanged once for a cookie, which every API route then
 * accepts in place of the key, acting as that key, until the session is signed out, left unused,
 * past its absolute end, or its key is revoked.
 */

describe("console sessions", () => {
  it("signing in answers who the session acts as, and sets the cookie", async () => {
    const tenant = await seedTenant();
    const { reply, setCookie } = await signIn(tenant.managementKey);
    expect(reply.body).toMatchObject({
      tenant_id: tenant.tenantId,
      application: { id: tenant.managementApplicationId, type: "management" },
      permissions: expect.arrayContaining(["application:read", "application:create"]),
    });
    const expiresAt = Date.parse(reply.body.expires_at);
    expect(expiresAt - Date.now()).toBeGreaterThan(CONSOLE_SESSIONS.idleLifetimeMs - 60_000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(CONSOLE_SESSIONS.idleLifetimeMs);
    expect(setCookie).toMatch(/^__Host-svc_console=console_[A-Za-z0-9_-]{43};/);
    expect(setCookie).toContain("Path=/");
  });

  it("GET /console/session answers the session to its cookie, and a 401 without one", async () => {
    const tenant = await seedTenant();
    const session = await signIn(tenant.managementKey);
    const read = await callWithCookie(session, "GET", "/console/session");
    expect(read.status).toBe(200);
    expect(read.body.application.id).toBe(tenant.managementApplicationId);
    expectProblem(await call("GET", "/console/session"), 401);
    expectProblem(await callWithCookie({ cookie: "__Host-svc_console=console_unknown" }, "GET", "/console/session"), 401);
  });

  it("a private key signs in too, and the session may do only what the key may", async () => {
    const tenant = await seedTokenTenant();
    const reader = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const token = await createToken(tenant.key, { type: "token", data: "kept" });
    const session = await signIn(reader.key);
    expect(session.reply.body.permissions).toEqual(["token:read"]);
    const read = await callWithCookie(session, "GET", `/tokens/${token.id}`);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(token.id);
    const created = await callWithCookie(session, "POST", "/tokens", { body: { type: "token", data: "new" } });
    expect(expectProblem(created, 403).detail).toMatch(/token:create/);
  });

  it("every API route takes the cookie in place of the key: reads and writes act as the key", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const created = await callWithCookie(session, "POST", "/tokens", { body: { type: "token", data: "by cookie" } });
    expect(created.status, created.text).toBe(201);
    const byKey = await call("GET", `/tokens/${created.body.id}`, { key: tenant.key });
    expect(byKey.status).toBe(200);
    const management = await signIn(tenant.managementKey);
    const listed = await callWithCookie(management, "GET", "/applications");
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((application: { id: string }) => application.id)).toContain(tenant.applicationId);
  });

  it("the audit log names the key's application and the key itself as the actor of a cookie's request", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const created = await callWithCookie(session, "POST", "/tokens", { body: { type: "token", data: "audited" } });
    expect(created.status).toBe(201);
    const keys = await call("GET", `/applications/${tenant.applicationId}/keys`, { key: tenant.managementKey });
    const [entry] = await logEntries(tenant, 1, { entity_id: created.body.id });
    expect(entry).toMatchObject({ actor_id: tenant.applicationId, actor_type: "application", credential_id: keys.body[0].id });
  });

  it("signing out deletes the session and clears the cookie; the cookie then answers 401", async () => {
    const tenant = await seedTenant();
    const session = await signIn(tenant.managementKey);
    const out = await callWithCookie(session, "DELETE", "/console/session");
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/^__Host-svc_console=;.*Max-Age=0/);
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
    expectProblem(await callWithCookie(session, "GET", "/applications"), 401);
  });

  it("a request with the key header is the key's, whatever cookie it carries", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.managementKey);
    const reply = await call("GET", "/applications", { key: tenant.key, headers: { cookie: session.cookie, origin: OWN_ORIGIN } });
    expect(expectProblem(reply, 403).detail).toMatch(/application:read/);
  });

  it("using the session renews it, written at most once a minute", async () => {
    const tenant = await seedTenant();
    const session = await signIn(tenant.managementKey);
    await ageSessions(tenant.tenantId, 5 * 60_000);
    const [aged] = await consoleSessionRows(tenant.tenantId);
    const renewed = await callWithCookie(session, "GET", "/console/session");
    expect(Date.parse(renewed.body.expires_at)).toBeGreaterThan(aged!.expires_at as number);
    const [row] = await consoleSessionRows(tenant.tenantId);
    expect(row!.renewed_at).toBeGreaterThan(aged!.renewed_at as number);
    await callWithCookie(session, "GET", "/applications");
    expect((await consoleSessionRows(tenant.tenantId))[0]!.renewed_at).toBe(row!.renewed_at);
  });

  it("renewal never carries the session past its absolute end", async () => {
    const tenant = await seedTenant();
    const session = await signIn(tenant.managementKey);
    // Signed in nearly the absolute lifetime ago, last used two minutes ago.
    const now = Date.now();
    await env.DB.prepare("UPDATE console_sessions SET created_at = ?, renewed_at = ?, ends_at = ? WHERE tenant_id = ?")
      .bind(now - CONSOLE_SESSIONS.absoluteLifetimeMs + 10 * 60_000, now - 2 * 60_000, now + 10 * 60_000, tenant.tenantId)
      .run();
    const [row] = await consoleSessionRows(tenant.tenantId);
    const renewed = await callWithCookie(session, "GET", "/console/session");
    expect(renewed.status).toBe(200);
    expect(Date.parse(renewed.body.expires_at)).toBe(row!.ends_at);
  });

  it("the cron deletes ended sessions", async () => {
    const tenant = await seedTenant();
    await signIn(tenant.managementKey);
    await ageSessions(tenant.tenantId, CONSOLE_SESSIONS.idleLifetimeMs + 1);
    await runCron();
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("sessions go with their tenant when it is shredded", async () => {
    const tenant = await seedTenant();
    await signIn(tenant.managementKey);
    // The sign-in's audit entry is written first: one arriving after the shred would be dropped, with a warning.
    const data = await dataDatabaseOf(tenant.tenantId);
    await vi.waitFor(
      async () => {
        const written = await data
          .prepare("SELECT count(*) AS n FROM audit_log WHERE tenant_id = ? AND operation = 'sign_in'")
          .bind(tenant.tenantId)
          .first<{ n: number }>();
        expect(written?.n).toBe(1);
        // The audit writer's bound, not a second: its batch second and a 5 s retry, on a loaded machine.
      },
      { timeout: 30_000 },
    );
    const shred = await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY } });
    expect(shred.status, shred.text).toBe(200);
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("sessions go with their application when it is deleted", async () => {
    const tenant = await seedTenant();
    const application = await createApplication(tenant, { type: "private", permissions: TOKEN_PERMISSIONS });
    await signIn(application.key);
    expect(await consoleSessionRows(tenant.tenantId)).toHaveLength(1);
    expect((await call("DELETE", `/applications/${application.id}`, { key: tenant.managementKey })).status).toBe(204);
    expect(await consoleSessionRows(tenant.tenantId)).toEqual([]);
  });

  it("the cookie is named after the header prefix", async () => {
    const tenant = await seedTenant();
    const reply = await callConfigured({ HEADER_PREFIX: "BT" }, "POST", "/console/session", { body: { api_key: tenant.managementKey } });
    expect(reply.status).toBe(201);
    expect(reply.headers.get("set-cookie")).toMatch(/^__Host-bt_console=/);
    const document = await callConfigured({ HEADER_PREFIX: "BT" }, "GET", "/openapi.json");
    expect(document.body.components.securitySchemes.ConsoleSession.name).toBe("bt_console");
  });

  it("the cookie is Secure and named __Host-svc_console (Path=/, no Domain), except over plain http on loopback", async () => {
    const tenant = await seedTenant();
    const { setCookie } = await signIn(tenant.managementKey);
    expect(setCookie).toMatch(/^__Host-svc_console=[^;]+; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    for (const origin of [
      "http://localhost:8787",
      "http://127.0.0.1:8787",
      "http://[::1]:8787",
      "https://localhost:8787",
      "https://vault.example",
    ]) {
      const response = await SELF.fetch(`${origin}/console/session`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ api_key: tenant.managementKey }),
      });
      expect(response.status).toBe(201);
      const cookie = response.headers.get("set-cookie") ?? "";
      const secure = origin.startsWith("https:");
      expect(/; Secure/.test(cookie), origin).toBe(secure);
      expect(cookie.split("=", 1)[0], origin).toBe(secure ? "__Host-svc_console" : "svc_console");
      await response.arrayBuffer();
      // The session answers to the name it was given there, and signs out under it.
      const name = cookie.split(";", 1)[0]!;
      const read = await SELF.fetch(`${origin}/console/session`, { headers: { cookie: name } });
      expect(read.status, origin).toBe(200);
      await read.arrayBuffer();
      const out = await SELF.fetch(`${origin}/console/session`, { method: "DELETE", headers: { cookie: name, origin } });
      expect(out.status, origin).toBe(204);
      expect(out.headers.get("set-cookie"), origin).toMatch(new RegExp(`^${cookie.split("=", 1)[0]}=;.*Max-Age=0`));
    }
  });

  it("a proxy that requires an API key takes the session's cookie in its place, from the vault's own pages", async () => {
    const tenant = await seedTokenTenant();
    const session = await signIn(tenant.key);
    const token = await createToken(tenant.key, { type: "token", data: "secret value" });
    const proxy = await createProxy(tenant);
    const marker = `console-${crypto.randomUUID()}`;
    const tried = await invoke("POST", `/${marker}`, {
      proxyKey: proxy.key,
      headers: { cookie: session.cookie, origin: OWN_ORIGIN },
      body: { value: `{{ ${token.id} }}` },
    });
    expect(tried.status, tried.text).toBe(200);
    expect(tried.json.body).toBe(JSON.stringify({ value: "secret value" }));
    expect(tried.json.headers.cookie).toBeUndefined();
    const foreign = await invoke("POST", `/${marker}`, {
      proxyKey: proxy.key,
      headers: { cookie: session.cookie, origin: "https://attacker.example" },
      body: { value: `{{ ${token.id} }}` },
    });
    expect(foreign.status, foreign.text).toBe(403);
    expect(await destinationSaw(marker)).toBe(1);
  });

  it("the bootstrap key signs in as the first request the vault ever gets", async () => {
    const bootstrapKey = `key_console_bootstrap_${crypto.randomUUID()}`;
    const reply = await callConfigured({ BOOTSTRAP_API_KEY: bootstrapKey }, "POST", "/console/session", {
      body: { api_key: bootstrapKey },
    });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.application.type).toBe("management");
  });
});
