/**
 * The composition root's half of the request context (its types are src/context.ts): the only code
 * that turns bindings into databases, configuration, tenant keys and a host for tenant code. Built
 * once per request by middleware (src/runtime/middleware.ts), and outside a request by the queue
 * and cron handlers (src/runtime/handlers.ts) and the sandbox's bridge (src/runtime/bridge.ts).
 */
import { AuditTrail } from "../audit/trail";
import type { CommitMark, ControlCommitMark, RequestContext, ScriptHost, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { CONTROL_BINDING, type Database, dataBindings, databaseOf, sessionOf } from "../db/client";
import type { MarkQuery } from "../db/commit-marks";
import type { WriteFence } from "../db/write-fence";
import { type Bindings, type Config, configOf } from "../env";
import { ConfigurationError, RevealedValues, TenantMovingError } from "../errors";
import { tenantKeysOf } from "../keys/service";
import { DispatchHost } from "../sandbox/dispatch-host";
import { LoaderHost } from "../sandbox/loader-host";
import { placementOf } from "../tenants/directory";

/** A request's context: the one constructor of every RequestContext. */
export function requestContextOf(env: Bindings, traceId: string): RequestContext {
  return new BoundRequestContext(env, traceId);
}

class BoundRequestContext implements RequestContext {
  readonly config: Config;

  constructor(
    protected readonly env: Bindings,
    readonly traceId: string,
    readonly audit: AuditTrail = new AuditTrail(traceId),
    readonly revealed: RevealedValues = new RevealedValues(),
  ) {
    this.config = configOf(env);
  }

  get auditQueue(): Queue {
    return this.env.AUDIT_QUEUE;
  }

  get webhookQueue(): Queue {
    return this.env.WEBHOOK_QUEUE;
  }

  get rotationQueue(): Queue {
    return this.env.ROTATION_QUEUE;
  }

  get reactionQueue(): Queue {
    return this.env.REACTION_QUEUE;
  }

  get keyRateLimit(): RateLimit {
    return this.env.KEY_RATE_LIMIT;
  }

  get publicKeyRateLimit(): RateLimit {
    return this.env.PUBLIC_KEY_RATE_LIMIT;
  }

  get publicClientRateLimit(): RateLimit {
    return this.env.PUBLIC_CLIENT_RATE_LIMIT;
  }

  get documents(): R2Bucket {
    return this.env.DOCUMENTS;
  }

  get applePayGateway(): Fetcher | null {
    return this.env.APPLE_PAY_GATEWAY ?? null;
  }

  get control(): Database {
    return databaseOf(this.env, CONTROL_BINDING);
  }

  dataBindings(): string[] {
    return dataBindings(this.env);
  }

  dataDatabase(binding: string): D1Database {
    return databaseOf(this.env, binding).$client;
  }

  dataDatabases(): Database[] {
    return this.dataBindings().map((binding) => databaseOf(this.env, binding));
  }

  keysOf(tenantId: string): Promise<TenantKeys> {
    return tenantKeysOf(this, tenantId);
  }

  async forTenant(tenantId: string, bookmark?: string): Promise<TenantContext> {
    const placement = await placementOf(this.control, tenantId, this.config.CREDENTIAL_CACHE_TTL_MS);
    if (placement === null) throw new ConfigurationError(`Tenant ${tenantId} has no data database in the directory`);
    return this.placed(tenantId, placement.database, bookmark, placement.writesBlocked);
  }

  placed(tenantId: string, binding: string, bookmark?: string, writesBlocked = false): TenantContext {
    return new BoundTenantContext(this.env, this.traceId, this.audit, this.revealed, tenantId, binding, bookmark, writesBlocked);
  }
}

class BoundTenantContext extends BoundRequestContext implements TenantContext {
  #sandbox: ScriptHost | undefined;
  #keys: Promise<TenantKeys> | undefined;
  #data: { db: Database; session: D1DatabaseSession } | undefined;
  #staleReads = false;
  #commitMark: CommitMark | null = null;
  #controlCommitMark: ControlCommitMark | null = null;

  constructor(
    env: Bindings,
    traceId: string,
    audit: AuditTrail,
    revealed: RevealedValues,
    readonly tenantId: string,
    readonly dataBinding: string,
    /** The caller's bookmark: the data this request reads is at least as fresh. */
    private readonly callerBookmark?: string,
    /** A move of the tenant to another data database is switching over: writes must wait. */
    private readonly writesBlocked = false,
  ) {
    super(env, traceId, audit, revealed);
  }

  get sandbox(): ScriptHost {
    this.#sandbox ??=
      this.config.SANDBOX_HOST === "dispatch"
        ? new DispatchHost(this.env, this.config, this.revealed, this.control)
        : new LoaderHost(this.env, this.config, this.revealed);
    return this.#sandbox;
  }

  allowStaleReads(): void {
    this.#staleReads = true;
  }

  get db(): Database {
    this.#data ??= sessionOf(
      this.env,
      this.dataBinding,
      this.callerBookmark ?? (this.#staleReads ? "first-unconstrained" : "first-primary"),
    );
    return this.#data.db;
  }

  requireWritable(): void {
    if (this.writesBlocked) throw new TenantMovingError(this.tenantId, this.#movingRetrySeconds());
  }

  writeFence(writtenAt: number): WriteFence {
    return { tenantId: this.tenantId, writtenAt, retryAfterSeconds: this.#movingRetrySeconds() };
  }

  #movingRetrySeconds(): number {
    return Math.ceil((2 * this.config.CREDENTIAL_CACHE_TTL_MS) / 1000) + 1;
  }

  bookmark(): string | null {
    return this.#data?.session.getBookmark() ?? null;
  }

  keys(): Promise<TenantKeys> {
    this.#keys ??= this.keysOf(this.tenantId);
    return this.#keys;
  }

  markCommitWith(mark: CommitMark): void {
    this.#commitMark = mark;
  }

  takeCommitMark(): CommitMark | null {
    const mark = this.#commitMark;
    this.#commitMark = null;
    return mark;
  }

  markControlCommitWith(mark: ControlCommitMark): void {
    this.#controlCommitMark = mark;
  }

  async withControlMark<T>(outcome: unknown, write: (mark: MarkQuery | null) => Promise<T>): Promise<T> {
    const mark = this.#controlCommitMark;
    this.#controlCommitMark = null;
    const query = mark && (await mark.queryFor(outcome));
    let written: T;
    try {
      written = await write(query);
    } catch (error) {
      throw mark?.refusalOf(error) ?? error;
    }
    mark?.committed();
    return written;
  }
}
