/**
 * The hash chain that makes each tenant's log tamper-evident. Entry n's hash is the tenant's keyed
 * HMAC (src/crypto/tenant-keys.ts, purpose "audit") of entry n-1's hash and of entry n's content,
 * its position included. Editing an entry changes its hash; deleting one leaves a gap in `seq` or a
 * link that no longer matches; swapping two breaks both links. Without the key, nobody can forge a
 * replacement chain.
 */
import type { TenantKeys } from "../crypto/tenant-keys";
import type { AuditEntry } from "./entry";

/** The hash before the first entry. */
export const GENESIS = "";

/** An entry as the log stores it. */
export type ChainedEntry = Omit<AuditEntry, "event"> & { seq: number; hash: string };

/** The columns an entry's hash covers, in a fixed order: every stored column but the hash itself. */
export const CHAINED_COLUMNS = [
  "seq",
  "id",
  "tenant_id",
  "actor_id",
  "actor_type",
  "credential_id",
  "entity_type",
  "entity_id",
  "operation",
  "message",
  "status",
  "trace_id",
  "created_at",
] as const;

/** The entry's values of CHAINED_COLUMNS, in their order. */
export function chainedValues(entry: Omit<ChainedEntry, "hash">): unknown[] {
  return CHAINED_COLUMNS.map((column) => entry[column]);
}

export function linkHash(keys: TenantKeys, previousHash: string, entry: Omit<ChainedEntry, "hash">): Promise<string> {
  return keys.auditMac(`${previousHash}\n${JSON.stringify(chainedValues(entry))}`);
}

/** Extends a chain whose head is (`seq`, `hash`) with `entries`, in order. */
export async function extend(keys: TenantKeys, head: { seq: number; hash: string }, entries: AuditEntry[]): Promise<ChainedEntry[]> {
  const chained: ChainedEntry[] = [];
  let { seq, hash } = head;
  for (const { event: _event, ...entry } of entries) {
    seq += 1;
    hash = await linkHash(keys, hash, { ...entry, seq });
    chained.push({ ...entry, seq, hash });
  }
  return chained;
}

/** The MAC of a chain's anchor (the last entry retention purged), so that it cannot be moved. */
export function anchorMac(keys: TenantKeys, seq: number, hash: string): Promise<string> {
  return keys.auditMac(`anchor\n${seq}\n${hash}`);
}

/** A chain's head: the last entry written, and since which head the writer found every head's MAC valid. */
export interface Head {
  seq: number;
  hash: string;
  macSince: number;
}

/** The MAC of a chain's head, so that the tail cannot be cut and the head moved back onto the new last entry. */
export function headMac(keys: TenantKeys, head: Head): Promise<string> {
  return keys.auditMac(`head\n${head.seq}\n${head.hash}\n${head.macSince}`);
}
