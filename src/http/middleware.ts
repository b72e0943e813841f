import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { holdsPermission } from "../auth/access";
import type { Permission } from "../auth/permissions";
import { countKeyRequests } from "../auth/rate-limits";
import { principalForKey } from "../auth/service";
import { RequestContext, type TenantContext } from "../context";
import { configOf } from "../env";
import { ForbiddenError, PayloadTooLargeError, UnauthenticatedError, UnsupportedMediaTypeError, ValidationError } from "../errors";
import { BODY } from "../limits";
import { isInvocationPath } from "../proxies/destination";
import { checkBodyText } from "./body";
import type { AppEnv } from "./context";

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Tags the request with a trace id and builds its context, which parses the configuration (a clear
 * 500 when it is broken). Every answer but a proxy's is marked not to be cached.
 */
export const traceAndConfigure: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = configOf(c.env);
  const given = c.req.header(config.headers.traceId);
  const traceId = given && TRACE_ID.test(given) ? given : crypto.randomUUID();
  c.set("request", new RequestContext(c.env, traceId));
  c.set("config", config);
  c.set("traceId", traceId);
  await next();
  c.res.headers.set(config.headers.traceId, traceId);
  // Answers hold tokens, keys and secrets: no cache between the vault and its caller may keep one.
  // A proxy's answer is the destination's own, caching included.
  if (!isInvocationPath(c.req.path)) c.res.headers.set("cache-control", "no-store");
};

/** A D1 bookmark: lexicographically sortable hex fields. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/**
 * Resolves `{P}-API-KEY` to the principal (401 when missing, unknown or revoked) and its tenant's
 * context. A `{P}-CONSISTENCY-BOOKMARK` the caller sends makes the request's reads at least that
 * fresh; the reply carries the bookmark where the request left the tenant's data database.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { headers } = c.var.config;
  const apiKey = c.req.header(headers.apiKey);
  if (!apiKey) throw new UnauthenticatedError(`The ${c.var.config.HEADER_PREFIX}-API-KEY header is required`);
  const principal = await principalForKey(c.var.request, apiKey);
  if (!principal) throw new UnauthenticatedError("The API key is unknown or has been revoked");
  c.var.request.audit.actingAs(principal);
  // Counted while the tenant is found: both only read, and a request over the limit goes no further.
  const [context] = await Promise.all([
    tenantContextOf(c, principal.tenantId),
    countKeyRequests(c.var.request, principal, c.req.raw.headers),
  ]);
  c.set("principal", principal);
  c.set("context", context);
  await next();
  const reached = context.bookmark();
  if (reached !== null) c.res.headers.set(headers.consistencyBookmark, reached);
};

/** The request acting for the caller's tenant, at least as fresh as the caller's bookmark. */
async function tenantContextOf(c: Context<AppEnv>, tenantId: string): Promise<TenantContext> {
  const header = c.var.config.headers.consistencyBookmark;
  const bookmark = c.req.header(header);
  if (bookmark !== undefined && !BOOKMARK.test(bookmark)) {
    throw ValidationError.field(`header ${header}`, "must be a bookmark this vault answered");
  }
  return c.var.request.forTenant(tenantId, bookmark);
}

/** For reads that may come from the nearest replica (list, get, search): see TenantContext.allowStaleReads. */
export const staleReadsAllowed: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.var.context.allowStaleReads();
  await next();
};

/** 403 naming the permission when the caller's application does not hold it anywhere. */
export function requirePermission(permission: Permission): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!holdsPermission(c.var.principal, permission)) throw ForbiddenError.missing(permission);
    await next();
  };
}

/**
 * A request that carries a body must send it in one of the accepted media types (415 otherwise),
 * as valid UTF-8 and, for JSON, nested no deeper than the one bound (400 otherwise). Every route
 * that reads a body has this gate, after authentication and the permission check. A bodiless
 * request passes, and the body schema then reports the missing fields.
 */
export function requireContentType(...accepted: string[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const mediaType = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
    if ((hasBody(c) || mediaType) && !accepted.includes(mediaType ?? "")) throw new UnsupportedMediaTypeError(accepted);
    if (c.req.raw.body !== null) checkBodyText(new Uint8Array(await c.req.arrayBuffer()), mediaType ?? "");
    await next();
  };
}

/**
 * For routes whose JSON body may be left out: an empty request is read as `{}` whatever content
 * type it names (the JS SDK posts an empty regenerateKey with a form content type), so its content
 * type is dropped before the validators see it; a request with a body must be JSON.
 */
export function optionalJson(): MiddlewareHandler<AppEnv> {
  const json = requireContentType("application/json");
  return async (c, next) => {
    if (!hasBody(c) && c.req.header("content-type") !== undefined) {
      const headers = new Headers(c.req.raw.headers);
      headers.delete("content-type");
      c.req.raw = new Request(c.req.raw, { headers });
    }
    await json(c, next);
  };
}

/** A body over BODY.maxBytes is a 413 before it is read: the API's and /proxy's one wiring. */
export const limitBody: MiddlewareHandler<AppEnv> = bodyLimit({
  maxSize: BODY.maxBytes,
  onError: () => {
    throw new PayloadTooLargeError(BODY.maxBytes);
  },
});

/** For routes that accept any JSON (tokenize, detokenize): an absent body would otherwise read as `{}`. */
export const requireBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!hasBody(c)) throw ValidationError.field("body", "is required");
  await next();
};

function hasBody(c: Context<AppEnv>): boolean {
  return Number(c.req.header("content-length") ?? 0) > 0 || c.req.header("transfer-encoding") !== undefined;
}
