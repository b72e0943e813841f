/**
 * The console session's cookie, and the Origin check that every request it authenticates must pass
 * before it may change anything (docs/security.md, "9. The console's sessions").
 */
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import { parse } from "hono/utils/cookie";
import type { Config } from "../env";
import { ForbiddenError, UnauthenticatedError } from "../errors";
import type { AppEnv } from "./context";

/** Methods that change nothing: a cookie request with any other must come from the vault's own pages. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** `svc_console`, or `bt_console` with HEADER_PREFIX=BT: the name on plain http on loopback, and the stem of the secure one. */
export function cookieNameOf(config: Pick<Config, "HEADER_PREFIX">): string {
  return `${config.HEADER_PREFIX.toLowerCase()}_console`;
}

/** The prefix browsers keep only on a `Secure`, `Path=/` cookie without `Domain`: set by this origin alone. */
const HOST_PREFIX = "__Host-";

/**
 * The session cookie's name for a request to `url`: `__Host-svc_console` wherever the cookie is
 * `Secure`, so a sibling subdomain cannot set one (a cookie it sets for the whole site carries a
 * `Domain`, which browsers refuse under this prefix), nor shadow or toss ours; the plain name on
 * http on loopback, where browsers would not keep a secure cookie.
 */
export function sessionCookieNameOf(config: Pick<Config, "HEADER_PREFIX">, url: URL): string {
  return isPlainLoopback(url) ? cookieNameOf(config) : `${HOST_PREFIX}${cookieNameOf(config)}`;
}

/** Whether a cookie's name is the session's, under either name (`name` is the plain one). */
function isSessionCookieName(candidate: string, name: string): boolean {
  return candidate === name || candidate === `${HOST_PREFIX}${name}`;
}

/**
 * The session's token from the request's cookies (the proxy pipeline has no Hono context to read them
 * with). Two cookies of the name are a 401, never a choice between them: a sibling origin of the
 * same site can set one for the whole site (`Domain=`) with a longer `Path`, which the browser sends
 * first, and the visitor would then act as the attacker's session while signed in as themself.
 */
export function sessionTokenOf(request: Request, config: Pick<Config, "HEADER_PREFIX">): string | undefined {
  const header = request.headers.get("cookie");
  if (header === null) return undefined;
  const name = sessionCookieNameOf(config, new URL(request.url));
  if (header.split(";").filter((pair) => nameOfPair(pair) === name).length > 1) {
    throw new UnauthenticatedError(
      `The request carries two ${name} cookies (another site of this domain may have set one): clear this site's cookies and sign in again`,
    );
  }
  return parse(header, name)[name];
}

/**
 * The cookie is `HttpOnly` (no page script reads it), `SameSite=Strict` (no other site's page sends
 * it) and `Secure` unless the vault is served over plain http on loopback (`npm start`), where a
 * browser would not keep a secure cookie. It carries no expiry: the session's row decides when it ends.
 */
export function setSessionCookie(c: Context<AppEnv>, token: string): void {
  setCookie(c, sessionCookieNameOf(c.var.config, new URL(c.req.url)), token, cookieOptionsOf(c));
}

export function clearSessionCookie(c: Context<AppEnv>): void {
  deleteCookie(c, sessionCookieNameOf(c.var.config, new URL(c.req.url)), cookieOptionsOf(c));
}

function cookieOptionsOf(c: Context<AppEnv>) {
  return { httpOnly: true, sameSite: "Strict", path: "/", secure: !isPlainLoopback(new URL(c.req.url)) } as const;
}

/**
 * A browser names the page that sent a request in `Origin`: a request that may change something and
 * that a cookie authenticates must come from the vault's own origin. Without `Origin` it is refused
 * too: browsers send it on every such fetch and form post, and only a browser holds the cookie.
 * Any request, a GET included, that the browser marks as sent by another origin's page
 * (`Sec-Fetch-Site: same-site` or `cross-site`) is refused as well: a GET through a proxy calls its
 * destination, and SameSite=Strict still sends the cookie from a sibling origin of the same site.
 */
export function requireOwnOrigin(request: Request): void {
  const site = request.headers.get("sec-fetch-site");
  const foreign = site === "same-site" || site === "cross-site";
  if (!foreign && SAFE_METHODS.has(request.method)) return;
  if (foreign || request.headers.get("origin") !== new URL(request.url).origin) {
    throw new ForbiddenError("A request authenticated by the console session must come from the vault's own pages (Origin)");
  }
}

/**
 * Signing in from another site's page is refused (403), so that no page can sign a visitor in to a
 * session of its choosing; a request without `Origin` is not a browser's (curl, a script) and passes.
 */
export function refuseForeignOrigin(c: Context<AppEnv>): void {
  const origin = c.req.header("origin");
  if (origin !== undefined && origin !== new URL(c.req.url).origin) {
    throw new ForbiddenError("The console can be signed in to only from the vault's own pages (Origin)");
  }
}

/**
 * A `Cookie` header without the console session's cookie (under either name; `cookieName` is the
 * plain one), or null when nothing else is left: a proxy forwards the caller's cookies, and the
 * session must never reach a destination.
 */
export function withoutSessionCookie(cookieHeader: string, cookieName: string): string | null {
  const kept = cookieHeader
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => pair !== "" && !isSessionCookieName(pair.split("=", 1)[0]!.trim(), cookieName));
  return kept.length > 0 ? kept.join("; ") : null;
}

/**
 * Drops every `Set-Cookie` of an answer that would set the console session's cookie (under either
 * name; `cookieName` is the plain one): a proxy's
 * destination answers on the vault's origin, and must not plant a session (its own tenant's) in the
 * visitor's browser or sign the visitor out.
 */
export function dropSessionCookieSetters(headers: Headers, cookieName: string): void {
  // workerd has Headers.getSetCookie (the Fetch standard's); the generated runtime types lack it.
  const setters = (headers as Headers & { getSetCookie(): string[] }).getSetCookie();
  if (setters.length === 0) return;
  const kept = setters.filter((setter) => !isSessionCookieName(sentNameOf(setter), cookieName));
  if (kept.length === setters.length) return;
  headers.delete("set-cookie");
  for (const setter of kept) headers.append("set-cookie", setter);
}

/**
 * The name a browser sends a `Set-Cookie`'s cookie back under. A cookie with an empty name
 * (`=svc_console=…`) is sent back as its value alone (RFC 6265bis 5.7, 5.8.3), so its name is the
 * part of the value before `=`.
 */
function sentNameOf(setter: string): string {
  const pair = setter.split(";", 1)[0]!;
  const name = nameOfPair(pair);
  return name !== "" ? name : nameOfPair(pair.slice(pair.indexOf("=") + 1));
}

/** The trimmed text before a pair's first `=`; empty without one. */
function nameOfPair(pair: string): string {
  const equals = pair.indexOf("=");
  return equals === -1 ? "" : pair.slice(0, equals).trim();
}

/** http on localhost, 127.0.0.0/8 or [::1]: a developer's machine, where no network sees the cookie. */
function isPlainLoopback(url: URL): boolean {
  if (url.protocol !== "http:") return false;
  const host = url.hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
