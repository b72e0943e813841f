import type { KeyPrincipal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import type { Bindings, Config } from "../env";

export type AppEnv = {
  Bindings: Bindings;
  Variables: {
    config: Config;
    traceId: string;
    /** Set for every request by traceAndConfigure. */
    request: RequestContext;
    /** Set by authenticate: the request acting for the caller's tenant. */
    context: TenantContext;
    principal: KeyPrincipal;
  };
};
