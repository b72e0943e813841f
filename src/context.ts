/**
 * The request-scoped context: what every service needs for one request, built once by middleware
 * (or, outside a request, by the scheduled handler and the sandbox's bridge). It is the only place
 * that turns bindings into a database, configuration and tenant keys; services never see `env`.
 *
 *   traceAndConfigure  → RequestContext  configuration, trace id, the control database
 *   authenticate       → TenantContext    + the caller's tenant: its data database, keys and sandbox
 *
 * Services take `(context, principal, input)`.
 */
import { AuditTrail } from "./audit/trail";
import type { TenantKeys } from "./crypto/tenant-keys";
import { CONTROL_BINDING, type Database, dataBindings, databaseOf, sessionOf } from "./db/client";
import { type Bindings, type Config, configOf } from "./env";
import { ConfigurationError, RevealedValues, TenantMovingError } from "./errors";
import { tenantKeysOf } from "./keys/service";
import { Sandbox } from "./sandbox";
import { placementOf } from "./tenants/directory";

export class RequestContext {
  readonly config: Config;

  constructor(
    protected readonly env: Bindings,
    readonly traceId: string,
    /** The audit entries this request records; a tenant context shares its request's. */
    readonly audit: AuditTrail = new AuditTrail(traceId),
    /** What the request revealed, which its errors and log lines must not repeat; shared likewise. */
    readonly revealed: RevealedValues = new RevealedValues(),
  ) {
    this.config = configOf(env);
  }

  /** Where requests send their audit entries (src/audit/recorder.ts). */
  get auditQueue(): Queue {
    return this.env.AUDIT_QUEUE;
  }

  /** Where events wait for delivery to the tenants' webhooks. */
  get webhookQueue(): Queue {
    return this.env.WEBHOOK_QUEUE;
  }

  /** Where data-key rotations queue their next step (src/keys/rotation.ts). */
  get rotationQueue(): Queue {
    return this.env.ROTATION_QUEUE;
  }

  /** Counts every request of a key (src/auth/rate-limits.ts). */
  get keyRateLimit(): RateLimit {
    return this.env.KEY_RATE_LIMIT;
  }

  /** Counts a public key's requests from each client address (src/auth/rate-limits.ts). */
  get publicClientRateLimit(): RateLimit {
    return this.env.PUBLIC_CLIENT_RATE_LIMIT;
  }

  /**
   * The control database: the directory of tenants, their applications and keys, proxies, reactors
   * and formulas; everything that resolves a credential before its tenant's data is reached.
   */
  get control(): Database {
    return databaseOf(this.env, CONTROL_BINDING);
  }

  /** The bindings of the data databases, in order (the control database when none is bound). */
  dataBindings(): string[] {
    return dataBindings(this.env);
  }

  /** A data database by its binding, for moving a tenant between them. */
  dataDatabase(binding: string): D1Database {
    return databaseOf(this.env, binding).$client;
  }

  /** Every database that holds tenant data, for maintenance that spans tenants (the cron). */
  dataDatabases(): Database[] {
    return this.dataBindings().map((binding) => databaseOf(this.env, binding));
  }

  /** A tenant's keys, for maintenance that walks rows of many tenants. */
  keysOf(tenantId: string): Promise<TenantKeys> {
    return tenantKeysOf(this, tenantId);
  }

  /**
   * The same request, now acting for one tenant, whose data database the directory names. With a
   * bookmark (the caller's `{P}-CONSISTENCY-BOOKMARK`), its reads are at least that fresh.
   */
  async forTenant(tenantId: string, bookmark?: string): Promise<TenantContext> {
    const placement = await placementOf(this.control, tenantId, this.config.CREDENTIAL_CACHE_TTL_MS);
    if (placement === null) throw new ConfigurationError(`Tenant ${tenantId} has no data database in the directory`);
    return this.placed(tenantId, placement.database, bookmark, placement.writesBlocked);
  }

  /** The request acting for a tenant whose data database is already known. */
  placed(tenantId: string, binding: string, bookmark?: string, writesBlocked = false): TenantContext {
    return new TenantContext(this.env, this.traceId, this.audit, this.revealed, tenantId, binding, bookmark, writesBlocked);
  }
}

export class TenantContext extends RequestContext {
  /** Where this tenant's code runs. */
  readonly sandbox: Sandbox;
  #keys: Promise<TenantKeys> | undefined;
  #data: { db: Database; session: D1DatabaseSession } | undefined;
  #staleReads = false;

  constructor(
    env: Bindings,
    traceId: string,
    audit: AuditTrail,
    revealed: RevealedValues,
    readonly tenantId: string,
    /** The binding of the data database that holds this tenant's tokens. */
    readonly dataBinding: string,
    /** The caller's bookmark: the data this request reads is at least as fresh. */
    private readonly callerBookmark?: string,
    /** A move of the tenant to another data database is switching over: writes must wait. */
    private readonly writesBlocked = false,
  ) {
    super(env, traceId, audit, revealed);
    this.sandbox = new Sandbox(env, this.config, revealed);
  }

  /**
   * Lets this request read from the nearest replica, which may lag the primary a little (lists,
   * reads and searches). Without it, and without a caller's bookmark, the data database is read at
   * the primary: detokenization and writes must see a token created a moment ago.
   */
  allowStaleReads(): void {
    this.#staleReads = true;
  }

  /** The data database that holds this tenant's tokens and idempotency records, in this request's session. */
  get db(): Database {
    this.#data ??= sessionOf(
      this.env,
      this.dataBinding,
      this.callerBookmark ?? (this.#staleReads ? "first-unconstrained" : "first-primary"),
    );
    return this.#data.db;
  }

  /** Refuses a write to the tenant's data while a move switches it to another database (503, Retry-After). */
  requireWritable(): void {
    if (this.writesBlocked) throw new TenantMovingError(this.tenantId, Math.ceil((2 * this.config.CREDENTIAL_CACHE_TTL_MS) / 1000) + 1);
  }

  /** Where this request left the data database, for the caller to send back; null when it did not read it. */
  bookmark(): string | null {
    return this.#data?.session.getBookmark() ?? null;
  }

  /** The tenant's data keys, loaded on first use and kept for the rest of the request. */
  keys(): Promise<TenantKeys> {
    this.#keys ??= this.keysOf(this.tenantId);
    return this.#keys;
  }
}
