import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../http/context";
import { auditedOperation } from "./operations";
import { recordAfterAnswer } from "./recorder";

/**
 * Records every request to an audited route, refused ones included: once the response is built (its
 * status is the entry's outcome), the request's entries are recorded after it has left
 * (docs/decisions.md, "Off the response's path").
 */
export const auditRequests: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  // c.get, not c.var: Hono builds a new object of every variable on each c.var read.
  const request = c.get("request");
  if (!request) return;
  const entries = request.audit.conclude(routeOf(c.req.path, matchedRoutes(c)), c.res.status);
  recordAfterAnswer((promise) => c.executionCtx.waitUntil(promise), request, entries);
};

/** The audited route the request matched: its own route (not a middleware's). Proxy calls are audited by src/runtime/proxy-calls.ts. */
function routeOf(path: string, routes: { method: string; path: string }[]) {
  const route = routes.findLast((candidate) => candidate.method !== "ALL");
  return route ? auditedOperation(route.method, route.path, path) : undefined;
}
