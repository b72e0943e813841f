/**
 * Moving a tenant to another data database, online and resumably. The state lives in the control
 * database (`tenant_moves`); each call advances it by at most `maxBatches` steps and answers where
 * it stands, so an interrupted move continues where it stopped when called again.
 *
 *   copying   tokens are copied in steps by id, then the audit log in steps by seq (data-copy.ts); the tenant
 *             keeps reading and writing the source
 *   blocked   writes answer 503 (Retry-After) and the audit writer holds the tenant's entries back
 *             (the queue delivers them later): after one credential time to live most isolates have
 *             seen the block; the source database is fenced (src/db/write-fence.ts), so a write still
 *             under way either committed already or is refused; the changes since the copy began
 *             (less the fence's bound on a write's age) are copied, tokens deleted meanwhile
 *             are removed, the audit entries appended since and the chain's head are copied, row
 *             counts are verified and the directory is switched, each a bounded step at a time
 *             (lastCopyStep; the move's `stage` says where it stands)
 *   switched  writes still wait one more time to live, for isolates that held the old placement;
 *             then the source copy is purged, a page a step, and the move row goes. The fence
 *             stays in the source, refusing writes that arrive late, until a move brings the
 *             tenant back there.
 */
import { credentialsChanged } from "../auth/lookup-cache";
import type { RequestContext } from "../context";
import { lowerFence, raiseFence, WRITE_MAX_AGE_MS } from "../db/write-fence";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { findRotation } from "../keys/storage";
import * as copy from "./data-copy";
import { requireDataBinding } from "./directory";
import * as storage from "./storage";

const ID_PAGE = 500;

/**
 * How far before the copy began the last copy looks for changes. A write stamps its rows when it
 * begins and may commit later, but the fence refuses one that reaches the database more than
 * WRITE_MAX_AGE_MS after its stamp by the database's clock; as much again covers the worker's clock
 * (copyStartedAt) running ahead of the database's.
 */
const CHANGED_SINCE_MARGIN_MS = 2 * WRITE_MAX_AGE_MS;

export interface MoveInput {
  database: string;
  /** Most steps this call takes (a batch copied, the switch, the purge); by default, all. */
  max_batches?: number;
}

export interface MoveStatus {
  tenant_id: string;
  source: string;
  target: string;
  phase: "copying" | "blocked" | "switched" | "done";
}

export async function moveTenant(context: RequestContext, tenantId: string, input: MoveInput): Promise<MoveStatus> {
  const { control } = context;
  requireDataBinding(context.dataBindings(), input.database);
  const placement = await storage.readPlacement(control, tenantId);
  if (!placement || placement.shredded) throw new NotFoundError(`Tenant ${tenantId}`);
  let move: storage.TenantMove =
    (await storage.findMove(control, tenantId)) ?? (await startMove(context, tenantId, placement.database, input.database));
  if (move.target !== input.database) {
    throw new ConflictError(`Tenant ${tenantId} is already being moved to ${move.target}; finish that move first`);
  }
  const source = context.dataDatabase(move.source);
  const target = context.dataDatabase(move.target);
  const ttl = context.config.CREDENTIAL_CACHE_TTL_MS;
  for (let step = 0; step < (input.max_batches ?? Number.POSITIVE_INFINITY); step++) {
    if (move.phase === "copying") {
      const tokens = await copy.tokensAfter(source, tenantId, move.cursor);
      await copy.copyTokens(source, target, tenantId, tokens.rows);
      const cursor = tokens.rows.at(-1)?.id ?? move.cursor;
      // Once the tokens are copied, each step copies a step of the audit log.
      const copied = !tokens.more && !(await copy.copyAuditEntries(source, target, tenantId));
      const changes: Partial<storage.TenantMove> = copied ? { cursor, phase: "blocked" as const, phaseStartedAt: Date.now() } : { cursor };
      await storage.updateMove(control, tenantId, changes);
      move = { ...move, ...changes };
      if (move.phase === "blocked") credentialsChanged();
    } else if (move.phase === "blocked") {
      const stage = await lastCopyStep(context, source, target, move);
      if (stage === null) {
        move = { ...move, phase: "switched", phaseStartedAt: Date.now() };
        credentialsChanged();
      } else {
        await storage.updateMove(control, tenantId, stage);
        move = { ...move, ...stage };
      }
    } else {
      await waitUntil(move.phaseStartedAt + ttl);
      // A page a step: a large tenant's purge spans calls as its copy does, each within its D1 queries.
      if ((await copy.purgeTenantData(source, tenantId, ID_PAGE)) === ID_PAGE) continue;
      await storage.deleteMove(control, tenantId);
      credentialsChanged();
      return { tenant_id: tenantId, source: move.source, target: move.target, phase: "done" };
    }
  }
  return { tenant_id: tenantId, source: move.source, target: move.target, phase: move.phase };
}

async function startMove(context: RequestContext, tenantId: string, source: string, target: string): Promise<storage.TenantMove> {
  if (source === target) throw ValidationError.field("database", `tenant ${tenantId} is already there`);
  // A rotation re-seals tokens without changing modified_at, which the move's last copy relies on.
  const rotation = await findRotation(context.control, tenantId);
  if (rotation && rotation.state !== "done") throw rotating(tenantId);
  const now = Date.now();
  const move: storage.TenantMove = {
    tenantId,
    source,
    target,
    phase: "copying",
    cursor: "",
    stage: "",
    copyStartedAt: now,
    phaseStartedAt: now,
  };
  if (!(await storage.insertMove(context.control, move))) {
    if (await storage.findMove(context.control, tenantId)) {
      throw new ConflictError(`Tenant ${tenantId}'s move was started by another call meanwhile; call again to advance it`);
    }
    if ((await storage.readPlacement(context.control, tenantId))?.shredded !== false) throw new NotFoundError(`Tenant ${tenantId}`);
    throw rotating(tenantId);
  }
  return move;
}

const rotating = (tenantId: string) =>
  new ConflictError(`Tenant ${tenantId}'s data keys are being rotated; wait for the rotation to finish`);

/**
 * One step of the last copy, with writes blocked, from where the move's stage and cursor say it
 * stands: first (once the block is seen through caches) the fence, then the tokens created or
 * changed since the copy began a step at a time, then the tokens deleted meanwhile a page at a time,
 * then the audit entries appended since a step at a time, and last the rows that live a day (token
 * intents, idempotency records, async reactions) and the chain, the row counts verified and the
 * directory switched. Answers the stage and cursor to save, or null once switched. Each step is
 * idempotent, so a step interrupted by a restart runs again whole.
 */
async function lastCopyStep(
  context: RequestContext,
  source: D1Database,
  target: D1Database,
  move: storage.TenantMove,
): Promise<Partial<storage.TenantMove> | null> {
  const { tenantId } = move;
  switch (move.stage) {
    case "": {
      await waitUntil(move.phaseStartedAt + context.config.CREDENTIAL_CACHE_TTL_MS);
      // The block is seen through caches; the fence is what the source database itself enforces, so
      // no write the last copy misses can land there after it (src/db/write-fence.ts).
      await raiseFence(source, tenantId, Date.now());
      return { stage: "changed", cursor: "" };
    }
    case "changed": {
      const since = move.copyStartedAt - CHANGED_SINCE_MARGIN_MS;
      const step = await copy.tokensChangedAfter(source, tenantId, since, move.cursor);
      await copy.copyTokens(source, target, tenantId, step.rows);
      return step.more ? { cursor: step.rows.at(-1)!.id } : { stage: "deleted", cursor: "" };
    }
    case "deleted": {
      const ids = await copy.tokenIdsAfter(target, tenantId, move.cursor, ID_PAGE);
      await copy.deleteTokens(target, tenantId, await copy.missingTokenIds(source, tenantId, ids));
      return ids.length === ID_PAGE ? { cursor: ids.at(-1)! } : { stage: "audit", cursor: "" };
    }
    case "audit": {
      if (await copy.copyAuditEntries(source, target, tenantId)) return {};
      await copy.copyTokenIntents(source, target, tenantId);
      await copy.copyIdempotencyRecords(source, target, tenantId);
      await copy.copyReactorRequests(source, target, tenantId);
      await copy.copyAuditChain(source, target, tenantId);
      const [from, to] = await Promise.all([copy.tenantRowCounts(source, tenantId), copy.tenantRowCounts(target, tenantId)]);
      if (JSON.stringify(from) !== JSON.stringify(to)) {
        // The next call copies the last changes again from their start.
        await storage.updateMove(context.control, tenantId, { stage: "changed", cursor: "" });
        throw new ConflictError(
          `Row counts differ after the copy (source ${JSON.stringify(from)}, target ${JSON.stringify(to)}); call again`,
        );
      }
      // The target may hold the fence of an earlier move away from it; from now on it is the tenant's database.
      await lowerFence(target, tenantId);
      await storage.switchPlacement(context.control, tenantId, move.target, Date.now());
      return null;
    }
  }
}

function waitUntil(time: number): Promise<void> {
  const delay = time - Date.now();
  return delay > 0 ? new Promise((resolve) => setTimeout(resolve, delay)) : Promise.resolve();
}
