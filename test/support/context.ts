import { env } from "cloudflare:test";
import { RequestContext, type TenantContext } from "../../src/context";
import type { Bindings } from "../../src/env";

/** A request context, as middleware builds one, for tests that call a service or the sandbox directly. */
export function requestContext(bindings: Bindings = env): RequestContext {
  return new RequestContext(bindings, `test/${crypto.randomUUID()}`);
}

export function tenantContext(tenantId: string, bindings: Bindings = env): TenantContext {
  return requestContext(bindings).forTenant(tenantId);
}
