import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { cursorAfter, positionOf } from "../db/cursors";
import { type CursorPage, cursorPageOf, isoTime, type Page, pageOf } from "../http/schemas";
import { AUDIT } from "../limits";
import { anchorMac, type ChainedEntry, GENESIS, headMac, linkHash } from "./chain";
import { ENTITY_TYPES } from "./entry";
import { HOUR_MS, KEPT_HOURS, purgeRollupBefore } from "./rollup";
import type { LogListRequest } from "./schema";
import * as storage from "./storage";

const VERIFY_PAGE = 500;
/** Entries retention purges per tenant and cron run, in one atomic batch. */
const PURGE_MAX_ENTRIES = 5_000;
const DAY_MS = 86_400_000;

export function entityTypes() {
  return Object.entries(ENTITY_TYPES).map(([value, display_name]) => ({ display_name, value }));
}

/**
 * A page of the tenant's entries, newest first. Without `start`, a page by number (the original
 * interface's shape, which its SDKs page through), whose pagination also carries `next` when more
 * entries follow; with `start`, the page after that cursor, read by keyset without counting. The
 * cursor is bound to the filters and the key's application (src/db/cursors.ts).
 */
export async function listLogs(
  context: TenantContext,
  principal: Principal,
  query: LogListRequest,
): Promise<(Page<LogResponse> & { pagination: { next?: string } }) | CursorPage<LogResponse>> {
  const filter = {
    entityType: query.entity_type,
    entityId: query.entity_id,
    actorId: query.actor_id,
    operation: query.operation,
    startDate: query.start_date,
    endDate: query.end_date,
  };
  const keys = await context.keys();
  const binding = {
    list: "GET /logs",
    applicationId: principal.applicationId,
    request: [query.entity_type, query.entity_id, query.actor_id, query.operation, query.start_date, query.end_date].map(
      (value) => value ?? null,
    ),
  };
  const nextAfter = (row: LogRow) => cursorAfter(keys, binding, { createdAt: row.createdAt, id: String(row.seq) });
  if (query.start === undefined) {
    const page = query.page ?? 1;
    const { rows, total } = await storage.logPage(context.db, principal.tenantId, { ...filter, page, size: query.size });
    const answer = pageOf(rows.map(present), total, page, query.size);
    const last = rows.at(-1);
    return last && page * query.size < total ? { ...answer, pagination: { ...answer.pagination, next: await nextAfter(last) } } : answer;
  }
  const position = await positionOf(keys, binding, query.start);
  const rows = await storage.logsAfter(
    context.db,
    principal.tenantId,
    filter,
    { createdAt: position.createdAt, seq: Number(position.id) },
    query.size + 1,
  );
  const page = rows.slice(0, query.size);
  const last = page.at(-1);
  return cursorPageOf(page.map(present), query.size, rows.length > query.size && last ? await nextAfter(last) : undefined);
}

type LogRow = Awaited<ReturnType<typeof storage.logPage>>["rows"][number];
type LogResponse = ReturnType<typeof present>;

function present(row: LogRow) {
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
  /** Entries recorded but not chained yet (audit_pending). */
  pending: number;
  complete: boolean;
  broken_at: { seq: number; entry_id: string | null; reason: string } | null;
}

/**
 * Recomputes the chain's links over a range (by default, all of it): from the anchor, or from the
 * entry before the range. The first link that does not hold is where the chain breaks: an entry
 * edited (its hash differs), deleted (a gap in seq) or moved (the link to its predecessor differs).
 * Both ends carry a MAC under the tenant's audit key, checked whatever the range: an anchor moved
 * forward (a cut prefix) or a head moved back (a cut tail) is found, as is an entry past the head.
 */
export async function verifyLogs(
  context: TenantContext,
  principal: Principal,
  range: { startDate?: number; endDate?: number; afterSeq?: number },
): Promise<Verification> {
  const tenantId = principal.tenantId;
  const d1 = context.db.$client;
  const keys = await context.keys();
  const end = await storage.chainEnd(d1, tenantId);
  const { chain } = end;
  const anchorSeq = chain?.anchorSeq ?? 0;
  const headSeq = chain?.headSeq ?? 0;
  const result: Verification = {
    verified: true,
    checked: 0,
    first_seq: null,
    last_seq: null,
    head_seq: headSeq,
    anchor_seq: anchorSeq,
    pending: end.pending,
    complete: true,
    broken_at: null,
  };
  const broken = (seq: number, entryId: string | null, reason: string) => {
    result.verified = false;
    result.broken_at = { seq, entry_id: entryId, reason };
    return result;
  };
  const endBroken = chain ? await brokenEnd(keys, chain, end.headEntryHash) : null;
  if (endBroken) return broken(endBroken.seq, null, endBroken.reason);
  if (end.pastHead) return broken(end.pastHead.seq, end.pastHead.id, "the entry lies past the chain's head: the head was moved back");
  if (end.beforeAnchor) {
    return broken(end.beforeAnchor.seq, end.beforeAnchor.id, "the entry lies before the chain's anchor: retention purged its place");
  }
  // The link the writer chained onto a head it could not vouch for.
  const unvouchedSeq = chain && chain.headMacSince > 0 ? chain.headMacSince + 1 : null;
  let afterSeq = anchorSeq;
  let previousHash = anchorSeq === 0 ? GENESIS : (chain?.anchorHash ?? GENESIS);
  const first = range.startDate === undefined ? (range.afterSeq ?? 0) + 1 : await storage.firstSeqFrom(d1, tenantId, range.startDate);
  if (first === null || first > headSeq) return result;
  if (first - 1 > anchorSeq) {
    const hash = await storage.hashAt(d1, tenantId, first - 1);
    if (hash === null) return broken(first - 1, null, "the entry is missing");
    previousHash = hash;
    afterSeq = first - 1;
  }
  for (;;) {
    const entries = await storage.entriesAfter(d1, tenantId, afterSeq, headSeq, VERIFY_PAGE);
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
      if (entry.seq === unvouchedSeq) {
        return broken(
          entry.seq,
          entry.id,
          `entries after seq ${entry.seq - 1} may have been deleted: the writer found the head there without a valid MAC ` +
            "(a chain written before heads carried one, or a head moved in the database) and chained this entry after it",
        );
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

/** What is wrong with the chain's anchor or head, or null when both hold. */
async function brokenEnd(
  keys: TenantKeys,
  chain: storage.Chain,
  headEntryHash: string | null,
): Promise<{ seq: number; reason: string } | null> {
  const { anchorSeq, headSeq } = chain;
  // The anchor before any purge is the chain's start, which the first entry's link already pins.
  if (anchorSeq > 0) {
    if (chain.anchorMac === null) {
      return { seq: anchorSeq, reason: "the chain's anchor carries no MAC: entries before it may have been cut" };
    }
    if (chain.anchorMac !== (await anchorMac(keys, anchorSeq, chain.anchorHash))) {
      return { seq: anchorSeq, reason: "the chain's anchor was altered" };
    }
  }
  if (chain.headMac === null) {
    return {
      seq: headSeq,
      reason:
        "the chain's head carries no MAC (a chain written before heads carried one and not appended to since, or a MAC removed): " +
        "entries after it may have been cut",
    };
  }
  if (chain.headMac !== (await headMac(keys, { seq: headSeq, hash: chain.headHash, macSince: chain.headMacSince }))) {
    return { seq: headSeq, reason: "the chain's head was altered: entries after it may have been cut" };
  }
  // Retention may purge through the head: the anchor is then the last entry.
  const lastHash = headSeq === anchorSeq ? chain.anchorHash : headEntryHash;
  if (lastHash !== chain.headHash) return { seq: headSeq, reason: "the chain's head does not match the entry at its seq" };
  return null;
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
    // The hour that ends the longest window's first is the first one kept.
    await purgeRollupBefore(d1, (Math.floor(now / HOUR_MS) - KEPT_HOURS) * HOUR_MS);
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
