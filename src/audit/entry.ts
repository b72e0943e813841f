/**
 * An audit entry as requests record it and the queue carries it. It never holds a sensitive value:
 * no token data, key, configuration value, request body or code; a search's `data:` values are
 * replaced before its query reaches a message.
 */
export const ACTOR_TYPES = ["application", "operator", "anonymous", "system"] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** What the log can name, in `GET /logs/entity-types` order. */
export const ENTITY_TYPES = {
  application: "Application",
  api_key: "API key",
  "client-key": "Client encryption key",
  document: "Document",
  "google-pay": "Google Pay resource",
  "google-pay-merchant": "Google Pay merchant registration",
  "google-pay-merchant-key": "Google Pay merchant key",
  "apple-pay-merchant": "Apple Pay merchant registration",
  "apple-pay-certificate": "Apple Pay payment processing certificate",
  "apple-pay": "Apple Pay token",
  "apple-pay-domain": "Apple Pay domain registration",
  "apple-pay-session": "Apple Pay merchant session",
  keys: "Encryption keys",
  log: "Audit log",
  permission: "Permission",
  proxy: "Proxy",
  reactor: "Reactor",
  "reactor-formula": "Reactor formula",
  session: "Session",
  tenant: "Tenant",
  token: "Token",
  "token-intent": "Token intent",
  webhook: "Webhook",
} as const;
export type EntityType = keyof typeof ENTITY_TYPES;

export interface Actor {
  id: string | null;
  type: ActorType;
  /** The API key's id, when the request presented a known one. */
  credentialId?: string | null;
}

export interface AuditEntry {
  /** Chosen when recorded; also the id of the webhook event the entry raises. */
  id: string;
  /** The deployment's own entries (a refused request whose key names no tenant) use DEPLOYMENT_TENANT. */
  tenant_id: string;
  actor_id: string | null;
  actor_type: ActorType;
  credential_id: string | null;
  entity_type: EntityType;
  entity_id: string | null;
  operation: string;
  message: string;
  /** The outcome: the HTTP status the request answered. */
  status: number;
  trace_id: string;
  /** Milliseconds since the epoch. */
  created_at: number;
  /**
   * Set on a request's own entry, not on the entries its services add (each token a proxy used): the
   * summary's hourly rollup counts requests by it. Carried by the queue, never written to the log.
   */
  request?: true;
  /** The webhook event this entry raises when it succeeded; delivered, never written to the log. */
  event?: { type: string; data: Record<string, unknown> };
}

/** The tenant id of entries that belong to no tenant: refusals of keys the vault does not know. */
export const DEPLOYMENT_TENANT = "00000000-0000-0000-0000-000000000000";

/** Items grouped by tenant, in their order. */
export function byTenant<T>(items: readonly T[], tenantOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const tenantId = tenantOf(item);
    const group = groups.get(tenantId);
    if (group) group.push(item);
    else groups.set(tenantId, [item]);
  }
  return groups;
}

/**
 * What one audit queue message carries: the entries of one send, as many as fit. Each message is
 * work for the queue and for the writer, whatever it holds, and a detokenization records an entry
 * per token. A single entry is what messages carried before, and may still be delivered.
 */
export type AuditMessage = AuditEntry[] | AuditEntry;

/** The entries a message carries. */
export function entriesOf(message: AuditMessage): AuditEntry[] {
  return Array.isArray(message) ? message : [message];
}
