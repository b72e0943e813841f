import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../http/context";
import { AuditUnavailableError, problemResponse } from "../http/problem";
import { isInvocationPath } from "../proxies/destination";
import { auditedOperation } from "./operations";
import { recordEntries } from "./recorder";

/**
 * Records every request to an audited route, refused ones included: after the response is built
 * (its status is the entry's outcome) and before it leaves, the request's entries go to the audit
 * queue. When they cannot be recorded anywhere, the response becomes a 503 instead.
 */
export const auditRequests: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const request = c.var.request;
  if (!request || !c.var.config.AUDIT_LOG) return;
  const entries = request.audit.conclude(routeOf(c.req.path, matchedRoutes(c)), c.res.status);
  try {
    await recordEntries(request, entries);
  } catch (error) {
    if (!(error instanceof AuditUnavailableError)) throw error;
    c.res = problemResponse(error.toProblem(), error.headers);
  }
};

/** The audited route the request matched: its own route (not a middleware's), or /proxy. */
function routeOf(path: string, routes: { method: string; path: string }[]) {
  if (isInvocationPath(path)) return auditedOperation("ALL", "/proxy", path);
  const route = routes.findLast((candidate) => candidate.method !== "ALL");
  return route ? auditedOperation(route.method, route.path, path) : undefined;
}
