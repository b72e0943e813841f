import { env } from "cloudflare:test";
import { expect } from "vitest";
import { BASE, type CallOptions, call, type Reply } from "./harness";

/** The vault's own origin, as its pages send it in `Origin`. */
export const OWN_ORIGIN = new URL(BASE).origin;
export const FOREIGN_ORIGIN = "https://attacker.example";

export interface ConsoleSession {
  /** `__Host-svc_console=<token>` (`svc_console` on loopback http), as a browser sends it back. */
  cookie: string;
  token: string;
  setCookie: string;
  reply: Reply;
}

/** Signs in to the console with the key, from the vault's own page; the reply must be a 201 with the cookie. */
export async function signIn(apiKey: string): Promise<ConsoleSession> {
  const reply = await call("POST", "/console/session", { body: { api_key: apiKey }, headers: { origin: OWN_ORIGIN } });
  expect(reply.status, reply.text).toBe(201);
  const setCookie = reply.headers.get("set-cookie") ?? "";
  const [, name, token] = /^((?:__Host-)?svc_console)=([^;]+)/.exec(setCookie) ?? [];
  expect(token, setCookie).toBeDefined();
  return { cookie: `${name}=${token}`, token: token!, setCookie, reply };
}

/** A call that a browser holding the session's cookie makes, from `origin` (the vault's own by default; null: none). */
export function callWithCookie(
  session: Pick<ConsoleSession, "cookie">,
  method: string,
  path: string,
  options: CallOptions & { origin?: string | null } = {},
): Promise<Reply> {
  const origin = options.origin === undefined ? OWN_ORIGIN : options.origin;
  return call(method, path, {
    ...options,
    headers: { ...options.headers, cookie: session.cookie, ...(origin === null ? {} : { origin }) },
  });
}

/** The session rows of the tenant, as the control database holds them. */
export async function consoleSessionRows(tenantId: string): Promise<Record<string, unknown>[]> {
  const { results } = await env.DB.prepare("SELECT * FROM console_sessions WHERE tenant_id = ?").bind(tenantId).all();
  return results;
}

/** Moves the tenant's sessions' times `ms` into the past, as if that long had gone by. */
export async function ageSessions(tenantId: string, ms: number): Promise<void> {
  await env.DB.prepare(
    "UPDATE console_sessions SET created_at = created_at - ?1, renewed_at = renewed_at - ?1, expires_at = expires_at - ?1, ends_at = ends_at - ?1 WHERE tenant_id = ?2",
  )
    .bind(ms, tenantId)
    .run();
}
