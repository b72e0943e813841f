/**
 * The middleware that builds each request's context: the trace id and configuration for every
 * request, then the caller's principal and tenant for every known route.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { KeyPrincipal } from "../auth/access";
import { countKeyRequests } from "../auth/rate-limits";
import { principalForKey, requireAllowedOrigin } from "../auth/service";
import { principalOfSessionRequest } from "../console/service";
import type { TenantContext } from "../context";
import { configOf } from "../env";
import { UnauthenticatedError, ValidationError } from "../errors";
import { sessionTokenOf } from "../http/console-cookie";
import type { AppEnv } from "../http/context";
import { ensureBootstrap } from "../tenants/service";
import { requestContextOf } from "./context";

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's trace id when it is one a log line can carry, or a new one. */
export function traceIdOf(given: string | null | undefined): string {
  return given && TRACE_ID.test(given) ? given : crypto.randomUUID();
}

/**
 * Tags the request with a trace id and builds its context, which parses the configuration (a clear
 * 500 when it is broken). Every answer is marked not to be cached.
 */
export const traceAndConfigure: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = configOf(c.env);
  const traceId = traceIdOf(c.req.header(config.headers.traceId));
  c.set("request", requestContextOf(c.env, traceId));
  c.set("config", config);
  c.set("traceId", traceId);
  await next();
  c.res.headers.set(config.headers.traceId, traceId);
  // Answers hold tokens, keys and secrets: no cache between the vault and its caller may keep one. (A
  // proxy's answer, the destination's own, caching included, is not the app's: src/runtime/proxy-calls.ts.)
  c.res.headers.set("cache-control", "no-store");
};

/** A D1 bookmark: lexicographically sortable hex fields. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/**
 * Resolves `{P}-API-KEY` (or, without it, the console session's cookie) to the principal (401 when
 * missing, unknown or revoked) and its tenant's context. A `{P}-CONSISTENCY-BOOKMARK` the caller
 * sends makes the request's reads at least that fresh; the reply carries the bookmark where the
 * request left the tenant's data database.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { headers } = c.var.config;
  const apiKey = c.req.header(headers.apiKey);
  const sessionToken = apiKey ? undefined : sessionTokenOf(c.req.raw, c.var.config);
  const principal = sessionToken
    ? await principalOfSessionRequest(c.var.request, c.req.raw, sessionToken)
    : await principalOfApiKey(c, apiKey);
  // Counted while the tenant is found: both only read, and a request over the limit goes no further.
  const [context] = await Promise.all([
    tenantContextOf(c, principal.tenantId),
    sessionToken ? undefined : countKeyRequests(c.var.request, principal, c.req.raw.headers),
  ]);
  c.set("principal", principal);
  c.set("context", context);
  await next();
  const reached = context.bookmark();
  if (reached !== null) c.res.headers.set(headers.consistencyBookmark, reached);
};

async function principalOfApiKey(c: Context<AppEnv>, apiKey: string | undefined): Promise<KeyPrincipal> {
  if (!apiKey) throw new UnauthenticatedError(`The ${c.var.config.HEADER_PREFIX}-API-KEY header is required`);
  const principal = await principalForKey(c.var.request, apiKey);
  if (!principal) throw new UnauthenticatedError("The API key is unknown or has been revoked");
  c.var.request.audit.actingAs(principal);
  requireAllowedOrigin(principal, c.req.header("origin"), new URL(c.req.url).origin);
  return principal;
}

/** The request acting for the caller's tenant, at least as fresh as the caller's bookmark. */
async function tenantContextOf(c: Context<AppEnv>, tenantId: string): Promise<TenantContext> {
  const header = c.var.config.headers.consistencyBookmark;
  const bookmark = c.req.header(header);
  if (bookmark !== undefined && !BOOKMARK.test(bookmark)) {
    throw ValidationError.field(`header ${header}`, "must be a bookmark this vault answered");
  }
  return c.var.request.forTenant(tenantId, bookmark);
}

/** Authenticates every request that reaches a known route; unknown routes fall through to 404/405. */
export const authenticateKnownRoutes: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!matchedRoutes(c).some((route) => route.method !== "ALL")) return next();
  await bootstrap(c);
  // Awaited, not returned: workerd reports a rejection adopted one microtask late as unhandled.
  await authenticate(c, next);
};

/**
 * Runs the bootstrap (BOOTSTRAP_API_KEY) first, for routes that read a key outside the authenticated
 * API: a vault's first request may be a console sign-in with the bootstrap key.
 */
export const bootstrapFirst: MiddlewareHandler<AppEnv> = async (c, next) => {
  await bootstrap(c);
  await next();
};

async function bootstrap(c: Context<AppEnv>): Promise<void> {
  const bootstrapKey = c.var.config.BOOTSTRAP_API_KEY;
  if (bootstrapKey) await ensureBootstrap(c.var.request, bootstrapKey);
}
