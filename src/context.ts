/**
 * The request-scoped context: what every service needs for one request, built once by middleware
 * (or, outside a request, by the scheduled handler and the sandbox's bridge). It is the only place
 * that turns bindings into a database, configuration and tenant keys; services never see `env`.
 *
 *   traceAndConfigure  → RequestContext  configuration, trace id, the control database
 *   authenticate       → TenantContext    + the caller's tenant: its database, keys and sandbox
 *
 * Services take `(context, principal, input)`.
 */
import { type TenantKeys, tenantKeysOf } from "./crypto/tenant-keys";
import { type Database, databaseOf } from "./db/client";
import { type Bindings, type Config, configOf } from "./env";
import { Sandbox } from "./sandbox";

export class RequestContext {
  readonly config: Config;

  constructor(
    protected readonly env: Bindings,
    readonly traceId: string,
  ) {
    this.config = configOf(env);
  }

  /** The control database: tenants, and what resolves a credential before its tenant is known. */
  get control(): Database {
    return databaseOf(this.env);
  }

  /** Every database that holds tenant data, for maintenance that spans tenants (the cron). */
  dataDatabases(): Database[] {
    return [databaseOf(this.env)];
  }

  /** The same request, now acting for one tenant. */
  forTenant(tenantId: string): TenantContext {
    return new TenantContext(this.env, this.traceId, tenantId);
  }
}

export class TenantContext extends RequestContext {
  /** Where this tenant's code runs. */
  readonly sandbox: Sandbox;
  #keys: Promise<TenantKeys> | undefined;

  constructor(
    env: Bindings,
    traceId: string,
    readonly tenantId: string,
  ) {
    super(env, traceId);
    this.sandbox = new Sandbox(env, this.config);
  }

  /** The database that holds this tenant's data. */
  get db(): Database {
    return databaseOf(this.env, this.tenantId);
  }

  /** The tenant's keys, derived on first use and kept for the rest of the request. */
  keys(): Promise<TenantKeys> {
    this.#keys ??= tenantKeysOf(this.env, this.tenantId);
    return this.#keys;
  }
}
