import type { Principal } from "../auth/access";
import { type Actor, type AuditEntry, DEPLOYMENT_TENANT, type EntityType } from "./entry";
import type { AuditedOperation } from "./operations";

/** An entry a service adds to its request's trail: each token a proxy, react or detokenization uses. */
export interface AuditRecord {
  /** By default, the trail's tenant (the cron's trail records for many). */
  tenantId?: string;
  entityType: EntityType;
  entityId: string | null;
  operation: string;
  message: string;
  /** By default, the status the request answers. */
  status?: number;
  event?: AuditEntry["event"];
}

/**
 * The audit entries of one request (or one queue batch, or one cron run): the request's own entry,
 * which the audit middleware concludes from the route and the status, and the entries services add.
 * The middleware records them all once the response has left (src/audit/recorder.ts).
 */
export class AuditTrail {
  /** The tenant whose log the entries go to; set when the caller is known. */
  tenantId: string = DEPLOYMENT_TENANT;
  actor: Actor = { id: null, type: "anonymous" };
  readonly #records: AuditRecord[] = [];
  #details: { entityType?: EntityType; entityId?: string | null; message?: string; event?: AuditEntry["event"] } = {};

  constructor(readonly traceId: string) {}

  /** The caller is an application of a tenant, through one of its API keys. */
  actingAs(principal: Principal): void {
    this.tenantId = principal.tenantId;
    this.actor = { id: principal.applicationId, type: "application", credentialId: principal.credentialId ?? null };
  }

  /**
   * Names what the request's own entry is about, when the path does not (a created entity, or one of
   * another type than the route's: POST /google-pay makes a token intent or a google-pay resource), or adds to its message.
   */
  describe(details: { entityType?: EntityType; entityId?: string | null; message?: string; event?: AuditEntry["event"] }): void {
    this.#details = { ...this.#details, ...details };
  }

  /** Adds an entry besides the request's own. */
  record(record: AuditRecord): void {
    this.#records.push(record);
  }

  /** The entries to send: the request's own (when its route is audited) and those services added. */
  conclude(route: { operation: AuditedOperation; entityId: string | null } | undefined, status: number): AuditEntry[] {
    const now = Date.now();
    const entry = (record: AuditRecord): AuditEntry => ({
      id: crypto.randomUUID(),
      tenant_id: record.tenantId ?? this.tenantId,
      actor_id: this.actor.id,
      actor_type: this.actor.type,
      credential_id: this.actor.credentialId ?? null,
      entity_type: record.entityType,
      entity_id: record.entityId === null ? null : wellFormed(record.entityId),
      operation: record.operation,
      message: wellFormed(record.message),
      status: record.status ?? status,
      trace_id: this.traceId,
      created_at: now,
      ...(record.event && (record.status ?? status) < 400 ? { event: record.event } : {}),
    });
    const entries = this.#records.map(entry);
    if (route) {
      const { operation } = route;
      entries.unshift({
        ...entry({
          entityType: this.#details.entityType ?? operation.entity,
          entityId: this.#details.entityId !== undefined ? this.#details.entityId : route.entityId,
          operation: operation.operation,
          message: this.#details.message ? `${operation.message}: ${this.#details.message}` : operation.message,
          event: this.#details.event,
        }),
        request: true,
      });
    }
    return entries;
  }
}

/** Lone surrogates, which a JSON escape or a string cut inside a pair leaves in a JS string. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The text with each lone surrogate replaced by U+FFFD, as D1 stores it: an entry's hash is computed
 * over what the log will read back, or a request could break its tenant's chain (test/audit/chain.test.ts).
 */
function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, "\ufffd");
}
