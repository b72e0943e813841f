/**
 * The request context as services see it: what every service needs for one request, as types only.
 * The composition root (src/runtime/context.ts) builds it from the bindings, once per request (or
 * per queue batch, cron run and bridge call); services never see `env`.
 *
 *   RequestContext  configuration, trace id, the control database
 *   TenantContext   + one tenant: its data database, keys and the host its code runs on
 *
 * Services take `(context, principal, input)`.
 */
// The trail is the audit feature's own class; every service records to it through the context.
import type { AuditTrail } from "./audit/trail";
import type { TenantKeys } from "./crypto/tenant-keys";
import type { Database } from "./db/client";
import type { MarkQuery } from "./db/commit-marks";
import type { WriteFence } from "./db/write-fence";
import type { Config } from "./env";
import type { ProblemError, RevealedValues } from "./errors";

export interface RequestContext {
  readonly config: Config;
  readonly traceId: string;
  /** The audit entries this request records; a tenant context shares its request's. */
  readonly audit: AuditTrail;
  /** What the request revealed, which its errors and log lines must not repeat; shared likewise. */
  readonly revealed: RevealedValues;
  /** Where requests send their audit entries (src/audit/recorder.ts). */
  readonly auditQueue: Queue;
  /** Where events wait for delivery to the tenants' webhooks. */
  readonly webhookQueue: Queue;
  /** Where data-key rotations queue their next step (src/keys/rotation.ts). */
  readonly rotationQueue: Queue;
  /** Where async reactions wait for the consumer that runs them (src/reactors/reactions.ts). */
  readonly reactionQueue: Queue;
  /** Counts every request of a private, management or session key (src/auth/rate-limits.ts). */
  readonly keyRateLimit: RateLimit;
  /** Counts every request of a public key, across addresses (src/auth/rate-limits.ts). */
  readonly publicKeyRateLimit: RateLimit;
  /** Counts a public key's requests from each client address (src/auth/rate-limits.ts). */
  readonly publicClientRateLimit: RateLimit;
  /** The documents' encrypted bytes (src/documents/), one object per document. */
  readonly documents: R2Bucket;
  /** Apple Pay's servers through the vault's client certificate (src/apple-pay/gateway.ts); null when the deployment binds none. */
  readonly applePayGateway: Fetcher | null;
  /**
   * The control database: the directory of tenants, their applications and keys, proxies, reactors
   * and formulas; everything that resolves a credential before its tenant's data is reached.
   */
  readonly control: Database;
  /** The bindings of the data databases, in order (the control database when none is bound). */
  dataBindings(): string[];
  /** A data database by its binding, for moving a tenant between them. */
  dataDatabase(binding: string): D1Database;
  /** Every database that holds tenant data, for maintenance that spans tenants (the cron). */
  dataDatabases(): Database[];
  /** A tenant's keys, for maintenance that walks rows of many tenants. */
  keysOf(tenantId: string): Promise<TenantKeys>;
  /**
   * The same request, now acting for one tenant, whose data database the directory names. With a
   * bookmark (the caller's `{P}-CONSISTENCY-BOOKMARK`), its reads are at least that fresh.
   */
  forTenant(tenantId: string, bookmark?: string): Promise<TenantContext>;
  /** The request acting for a tenant whose data database is already known. */
  placed(tenantId: string, binding: string, bookmark?: string, writesBlocked?: boolean): TenantContext;
}

export interface TenantContext extends RequestContext {
  readonly tenantId: string;
  /** The binding of the data database that holds this tenant's tokens. */
  readonly dataBinding: string;
  /** Where this tenant's code runs; built on first use, so only requests that run tenant code pay for it. */
  readonly sandbox: ScriptHost;
  /** The data database that holds this tenant's tokens and idempotency records, in this request's session. */
  readonly db: Database;
  /**
   * Lets this request read from the nearest replica, which may lag the primary a little (lists,
   * reads and searches). Without it, and without a caller's bookmark, the data database is read at
   * the primary: detokenization and writes must see a token created a moment ago.
   */
  allowStaleReads(): void;
  /** Refuses a write to the tenant's data while a move switches it to another database (503, Retry-After). */
  requireWritable(): void;
  /**
   * What a batch writing the tenant's data at `writtenAt` (the time its rows are stamped with) carries,
   * so that the database refuses it once a move has fenced the tenant there (src/db/write-fence.ts).
   */
  writeFence(writtenAt: number): WriteFence;
  /** Where this request left the data database, for the caller to send back; null when it did not read it. */
  bookmark(): string | null;
  /** The tenant's data keys, loaded on first use and kept for the rest of the request. */
  keys(): Promise<TenantKeys>;
  /** Gives the request's one data write the commit mark of its idempotency claim (the `idempotentWrite` middleware). */
  markCommitWith(mark: CommitMark): void;
  /** The commit mark the request's write carries in its batch, once: null when there is none, or it was taken. */
  takeCommitMark(): CommitMark | null;
  /** Gives the request's one control write the commit mark of its idempotency claim (the `idempotentControlWrite` middleware). */
  markControlCommitWith(mark: ControlCommitMark): void;
  /**
   * Runs the request's one control write with the commit mark of its idempotency claim (null when it
   * has none), which records `outcome`: what the route's answer to a retry is made from. A batch that
   * failed on the mark (another attempt of the request committed first) is the mark's refusal.
   */
  withControlMark<T>(outcome: unknown, write: (mark: MarkQuery | null) => Promise<T>): Promise<T>;
}

/**
 * The commit mark of an idempotency claim (src/idempotency/): a statement in the tenant's data database
 * that the request's write adds to its own batch, so that the record says what was written exactly
 * when it was. A crash leaves both or neither.
 */
export interface CommitMark {
  /** The statement that seals `outcome` (what the write did) into the record; it fails the batch when the claim was lost. */
  statement(d1: D1Database, outcome: unknown): Promise<D1PreparedStatement>;
  /** The answer when a batch failed because its claim was lost; null for any other failure. */
  refusalOf(error: unknown): ProblemError | null;
}

/**
 * The commit mark of an idempotency claim on a route that writes the control database (POST
 * /applications, /proxies …): a query the write adds to its own control batch, recording what was written
 * exactly when it was. A crash leaves both or neither.
 */
export interface ControlCommitMark {
  /**
   * The query that records `outcome` (what the write did); it fails the batch when another attempt of
   * the request committed. Handed back inside a function: a query that a promise resolves to is run.
   */
  queryFor(outcome: unknown): Promise<MarkQuery>;
  /** The answer when a batch failed because another attempt committed; null for any other failure. */
  refusalOf(error: unknown): ProblemError | null;
  /** The write that was handed the query finished without an error: its batch, the mark with it, committed. */
  committed(): void;
}

export type ScriptKind = "request-transform" | "response-transform" | "reactor";

/** Whose script it is: `id` is the proxy's, the reactor's or the reactor formula's id. */
export interface ScriptOwner {
  /** Null for an official formula, which belongs to no tenant. */
  tenantId: string | null;
  id: string;
  kind: ScriptKind;
}

export interface ScriptRequest {
  owner: ScriptOwner;
  code: string;
  input: { args: unknown; configuration: Record<string, unknown> };
  /** The application `bt` acts as; without one, tenant code gets no `bt`. */
  application: { tenantId: string; applicationId: string } | null;
}

/**
 * Where tenant code runs (src/sandbox/): the Worker Loader locally, a Workers for Platforms dispatch
 * namespace in production. Both hosts pass one conformance test (test/sandbox/hosts.test.ts).
 */
export interface ScriptHost {
  /**
   * Makes the script runnable where the host needs it ahead of time (the dispatch namespace), before
   * the row that holds the code is written. Nothing is withdrawn on an update or a delete: the
   * dispatch host's cron retires what no owner runs.
   */
  publish(owner: ScriptOwner, code: string): Promise<void>;
  /**
   * Runs the script on the input. The result is checked against its kind's contract
   * (src/sandbox/outcome.ts): a TransformResult for a transform, a ReactorResult for a reactor.
   */
  run(request: ScriptRequest): Promise<unknown>;
}
