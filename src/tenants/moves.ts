/**
 * Moving a tenant to another data database, online and resumably. The state lives in the control
 * database (`tenant_moves`); each call advances it by at most `maxBatches` steps and answers where
 * it stands, so an interrupted move continues where it stopped when called again.
 *
 *   copying   tokens are copied in steps by id, then the audit log in steps by seq (data-copy.ts); the tenant
 *             keeps reading and writing the source
 *   blocked   writes answer 503 (Retry-After) and the audit writer holds the tenant's entries back
 *             (the queue delivers them later): after one credential time to live every isolate has
 *             seen the block, the changes since the copy began are copied, tokens deleted meanwhile
 *             are removed, the audit entries appended since and the chain's head are copied, row
 *             counts are verified and the directory is switched
 *   switched  writes still wait one more time to live, for isolates that held the old placement;
 *             then the source copy is purged and the move row goes
 */
import { credentialsChanged } from "../auth/lookup-cache";
import type { RequestContext } from "../context";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { findRotation } from "../keys/storage";
import * as copy from "./data-copy";
import { requireDataBinding } from "./directory";
import * as storage from "./storage";

const ID_PAGE = 500;

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
      await waitUntil(move.phaseStartedAt + ttl);
      await copyLastChanges(source, target, tenantId, move.copyStartedAt);
      const [from, to] = await Promise.all([copy.tenantRowCounts(source, tenantId), copy.tenantRowCounts(target, tenantId)]);
      if (JSON.stringify(from) !== JSON.stringify(to)) {
        throw new ConflictError(
          `Row counts differ after the copy (source ${JSON.stringify(from)}, target ${JSON.stringify(to)}); call again`,
        );
      }
      const now = Date.now();
      await storage.switchPlacement(control, tenantId, move.target, now);
      move = { ...move, phase: "switched", phaseStartedAt: now };
      credentialsChanged();
    } else {
      await waitUntil(move.phaseStartedAt + ttl);
      while ((await copy.purgeTenantData(source, tenantId, ID_PAGE)) === ID_PAGE);
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
  if (rotation && rotation.state !== "done")
    throw new ConflictError(`Tenant ${tenantId}'s data keys are being rotated; wait for the rotation to finish`);
  const now = Date.now();
  const move: storage.TenantMove = { tenantId, source, target, phase: "copying", cursor: "", copyStartedAt: now, phaseStartedAt: now };
  await storage.insertMove(context.control, move);
  return move;
}

/** With writes blocked: tokens created or changed since the copy began, tokens deleted meanwhile, and the token intents. */
async function copyLastChanges(source: D1Database, target: D1Database, tenantId: string, since: number): Promise<void> {
  for (const step of await copy.tokensChangedSince(source, tenantId, since)) await copy.copyTokens(source, target, tenantId, step);
  let cursor = "";
  for (;;) {
    const ids = await copy.tokenIdsAfter(target, tenantId, cursor, ID_PAGE);
    if (ids.length === 0) break;
    await copy.deleteTokens(target, tenantId, await copy.missingTokenIds(source, tenantId, ids));
    cursor = ids.at(-1)!;
  }
  await copy.copyTokenIntents(source, target, tenantId);
  await copy.copyIdempotencyRecords(source, target, tenantId);
  await copy.copyReactorRequests(source, target, tenantId);
  while (await copy.copyAuditEntries(source, target, tenantId));
  await copy.copyAuditChain(source, target, tenantId);
}

function waitUntil(time: number): Promise<void> {
  const delay = time - Date.now();
  return delay > 0 ? new Promise((resolve) => setTimeout(resolve, delay)) : Promise.resolve();
}
