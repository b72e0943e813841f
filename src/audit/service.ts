import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { isoTime, type Page, pageOf } from "../http/schemas";
import { AUDIT } from "../limits";
import { anchorMac, type ChainedEntry, GENESIS, linkHash } from "./chain";
import { ENTITY_TYPES } from "./entry";
import * as storage from "./storage";

const VERIFY_PAGE = 500;
/** Entries retention purges per tenant and cron run, in one atomic batch. */
const PURGE_MAX_ENTRIES = 5_000;
const DAY_MS = 86_400_000;

export function entityTypes() {
  return Object.entries(ENTITY_TYPES).map(([value, display_name]) => ({ display_name, value }));
}

export async function listLogs(
  context: TenantContext,
  principal: Principal,
  filter: storage.LogFilter,
): Promise<Page<ReturnType<typeof present>>> {
  const { rows, total } = await storage.logPage(context.db, principal.tenantId, filter);
  return pageOf(rows.map(present), total, filter.page, filter.size);
}

function present(row: Awaited<ReturnType<typeof storage.logPage>>["rows"][number]) {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    actor_id: row.actorId,
    actor_type: row.actorType as ChainedEntry["actor_type"],
    credential_id: row.credentialId,
    entity_type: row.entityType,
    entity_id: row.entityId,
    operation: row.operation,
    message: row.message,
    status: row.status,
    trace_id: row.traceId,
    created_at: isoTime(row.createdAt)!,
    seq: row.seq,
    hash: row.hash,
  };
}

export interface Verification {
  verified: boolean;
  checked: number;
  first_seq: number | null;
  last_seq: number | null;
  head_seq: number;
  anchor_seq: number;
  complete: boolean;
  broken_at: { seq: number; entry_id: string | null; reason: string } | null;
}

/**
 * Recomputes the chain's links over a range (by default, all of it): from the anchor, or from the
 * entry before the range. The first link that does not hold is where the chain breaks: an entry
 * edited (its hash differs), deleted (a gap in seq, or a head past the last entry) or moved (the
 * link to its predecessor differs).
 */
export async function verifyLogs(
  context: TenantContext,
  principal: Principal,
  range: { startDate?: number; endDate?: number },
): Promise<Verification> {
  const tenantId = principal.tenantId;
  const d1 = context.db.$client;
  const keys = await context.keys();
  const chain = await storage.chainOf(d1, tenantId);
  const anchorSeq = chain?.anchorSeq ?? 0;
  const headSeq = chain?.headSeq ?? 0;
  const result: Verification = {
    verified: true,
    checked: 0,
    first_seq: null,
    last_seq: null,
    head_seq: headSeq,
    anchor_seq: anchorSeq,
    complete: true,
    broken_at: null,
  };
  const broken = (seq: number, entryId: string | null, reason: string) => {
    result.verified = false;
    result.broken_at = { seq, entry_id: entryId, reason };
    return result;
  };
  if (chain?.anchorMac && chain.anchorMac !== (await anchorMac(keys, chain.anchorSeq, chain.anchorHash))) {
    return broken(anchorSeq, null, "the chain's anchor was altered");
  }
  let afterSeq = anchorSeq;
  let previousHash = anchorSeq === 0 ? GENESIS : (chain?.anchorHash ?? GENESIS);
  if (range.startDate !== undefined) {
    const first = await storage.firstSeqFrom(d1, tenantId, range.startDate);
    if (first === null) return result;
    if (first - 1 > anchorSeq) {
      const hash = await storage.hashAt(d1, tenantId, first - 1);
      if (hash === null) return broken(first - 1, null, "the entry is missing");
      previousHash = hash;
      afterSeq = first - 1;
    }
  }
  for (;;) {
    const entries = await storage.entriesAfter(d1, tenantId, afterSeq, VERIFY_PAGE);
    for (const entry of entries) {
      if (range.endDate !== undefined && entry.created_at >= range.endDate) return result;
      if (result.checked >= AUDIT.verifyMaxEntries) {
        result.complete = false;
        return result;
      }
      if (entry.seq !== afterSeq + 1) return broken(afterSeq + 1, null, "the entry is missing");
      const { hash, ...content } = entry;
      if (hash !== (await linkHash(keys, previousHash, content))) {
        return broken(entry.seq, entry.id, "the entry was altered, or moved from its place in the chain");
      }
      result.checked += 1;
      result.first_seq ??= entry.seq;
      result.last_seq = entry.seq;
      afterSeq = entry.seq;
      previousHash = hash;
    }
    if (entries.length < VERIFY_PAGE) break;
  }
  if (range.endDate === undefined && afterSeq < headSeq) return broken(afterSeq + 1, null, "the entry is missing");
  return result;
}

/**
 * Retention (the cron): purges each tenant's entries older than AUDIT_RETENTION_DAYS. The chain
 * stays verifiable from its new start: the anchor moves to the last entry purged, with a MAC under
 * the tenant's key so that nobody can move it further and hide a deletion.
 */
export async function purgeOldLogs(context: RequestContext, now: number): Promise<void> {
  const cutoff = now - context.config.AUDIT_RETENTION_DAYS * DAY_MS;
  const databases = new Set([context.control.$client, ...context.dataDatabases().map((db) => db.$client)]);
  for (const d1 of databases) {
    for (const tenantId of await storage.chainedTenants(d1)) {
      const chain = await storage.chainOf(d1, tenantId);
      if (!chain) continue;
      const boundary = await storage.purgeBoundary(d1, tenantId, chain.anchorSeq, cutoff, PURGE_MAX_ENTRIES);
      if (!boundary) continue;
      const keys = await context.keysOf(tenantId);
      await storage.purgeThrough(d1, tenantId, boundary.seq, boundary.hash, await anchorMac(keys, boundary.seq, boundary.hash));
    }
  }
}
