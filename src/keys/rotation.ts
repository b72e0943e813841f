/**
 * Data-key rotation: online re-encryption of one tenant's data under a new data-key version, then
 * the destruction of the old one. The state lives in `key_rotations` (control database); a chain of
 * queue messages drives it in bounded steps, and the cron restarts a chain that stopped.
 *
 *   waiting    the new version is stored. Isolates cache key records for one credential time to
 *              live, so once it has passed every isolate writes under the new version and reads,
 *              `data:` search and deduplication use both
 *   running    each step re-encrypts a batch of what is still sealed under the old version: the
 *              tenant's proxies (key and configuration), reactors' configurations, webhook secrets,
 *              client encryption keys' private keys and idempotency records, then its tokens, whose
 *              fingerprint and blind indexes are recomputed. Every write is conditional on the
 *              ciphertext read, so a concurrent change wins and the record is picked up again if
 *              still old
 *   finishing  nothing old was found: one more time to live for lookups cached meanwhile (a proxy
 *              read before its re-encryption), a last count, then the old version is destroyed
 *   done       the row stays, for GET …/rotation, until the next rotation
 *
 * One chain at a time: a step runs only for the `runner` holding the rotation's lease, which every
 * step extends. A chain that stops (a restart, retries exhausted) lets its lease run out, and the
 * cron then starts a new one where the last left off: the state is all in the row and the data.
 */
import { credentialsChanged } from "../auth/lookup-cache";
import type { RequestContext } from "../context";
import { Keyring } from "../crypto/keyring";
import { auditKeyOf, newMaterial, type TenantKeys } from "../crypto/tenant-keys";
import { ConflictError, NotFoundError } from "../errors";
import { isoTime } from "../http/schemas";
import { findMove, readPlacement } from "../tenants/storage";
import { countSealedBefore, reencryptBatch } from "./reencryption";
import { storedTenantKeys } from "./service";
import * as storage from "./storage";

/** One message of a rotation's chain. */
export interface RotationMessage {
  tenant_id: string;
  runner: string;
}

export interface RotationStatus {
  tenant_id: string;
  from_version: number;
  to_version: number;
  state: storage.Rotation["state"];
  done: number;
  total: number | null;
  started_at: string;
  finished_at: string | null;
  last_error: string | null;
}

/**
 * How long one message's steps may run before the chain hands on to the next message: a step stops
 * at this budget between two pieces of work (reencryption.ts), so it ends within a piece and a rest
 * of it, well inside the lease. Short: a consumer invocation that ran for seconds starved the
 * requests of its isolate (locally, requests waiting on it were dropped), while handing on costs one
 * queue delivery.
 */
const STEP_BUDGET_MS = 1_000;

/** How long past its expected next step a chain keeps the lease: after that the cron takes over. */
const LEASE_SLACK_MS = 15_000;

/** The lease of a chain whose next step runs `delayMs` from now. */
const leaseFor = (delayMs = 0) => Date.now() + delayMs + STEP_BUDGET_MS + LEASE_SLACK_MS;

export function statusOf(rotation: storage.Rotation): RotationStatus {
  return {
    tenant_id: rotation.tenantId,
    from_version: rotation.fromVersion,
    to_version: rotation.toVersion,
    state: rotation.state,
    done: rotation.done,
    total: rotation.total,
    started_at: isoTime(rotation.startedAt)!,
    finished_at: isoTime(rotation.finishedAt),
    last_error: rotation.lastError,
  };
}

/** The tenant's latest rotation. */
export async function rotationStatus(context: RequestContext, tenantId: string): Promise<RotationStatus> {
  // Shredding a tenant deletes its rotation too.
  const rotation = await storage.findRotation(context.control, tenantId);
  if (!rotation) throw new NotFoundError(`No rotation of tenant ${tenantId}'s data keys`);
  return statusOf(rotation);
}

/**
 * Starts rotating the tenant's data keys: stores version N+1 (its audit key carried over, so the
 * audit chain stays verifiable) and queues the job's first step for one time to live later.
 */
export async function startRotation(context: RequestContext, tenantId: string): Promise<RotationStatus> {
  const { control } = context;
  const placement = await readPlacement(control, tenantId);
  if (!placement || placement.shredded) throw new NotFoundError(`Tenant ${tenantId}`);
  const running = await storage.findRotation(control, tenantId);
  if (running && running.state !== "done") {
    throw new ConflictError(`Tenant ${tenantId}'s data keys are already being rotated (${running.state}); GET its rotation to follow it`);
  }
  if (await findMove(control, tenantId)) throw beingMoved(tenantId);
  // Stores a tenant's derived keys first, if it predates envelope encryption.
  await context.keysOf(tenantId);
  const [current, ...older] = await storage.keyRecords(control, tenantId);
  if (!current || older.length > 0) throw new ConflictError(`Tenant ${tenantId} holds ${older.length + 1} data-key versions`);
  const keyring = Keyring.of(context.config.keyring);
  const material = newMaterial(auditKeyOf(await keyring.unwrap(current.wrapped, tenantId, current.version)));
  const version = current.version + 1;
  const { kekVersion, wrapped } = await keyring.wrap(material, tenantId, version);
  const now = Date.now();
  const ttl = context.config.CREDENTIAL_CACHE_TTL_MS;
  const rotation: storage.Rotation = {
    tenantId,
    fromVersion: current.version,
    toVersion: version,
    state: "waiting",
    done: 0,
    total: null,
    startedAt: now,
    stateStartedAt: now,
    finishedAt: null,
    runner: crypto.randomUUID(),
    leaseUntil: now + ttl + LEASE_SLACK_MS,
    lastError: null,
  };
  try {
    await storage.insertRotation(control, { tenantId, version, kekVersion, wrapped, createdAt: now }, rotation);
  } catch (error) {
    if (error instanceof Error && /UNIQUE constraint failed: tenant_keys/.test(error.message)) {
      throw new ConflictError(`Tenant ${tenantId}'s data keys are already being rotated; GET its rotation to follow it`);
    }
    if (storage.isTenantMovingError(error)) throw beingMoved(tenantId);
    throw error;
  }
  credentialsChanged();
  await queueStep(context, rotation, ttl).catch((error: unknown) => {
    // The rotation is stored: with no message, its lease runs out and the cron starts its chain.
    console.warn(`rotation: the first step of tenant ${tenantId} was not queued (${String(error)}); the cron will start it`);
  });
  return statusOf(rotation);
}

const beingMoved = (tenantId: string) => new ConflictError(`Tenant ${tenantId} is being moved; finish the move first`);

function queueStep(context: RequestContext, rotation: Pick<storage.Rotation, "tenantId" | "runner">, delayMs: number) {
  const message: RotationMessage = { tenant_id: rotation.tenantId, runner: rotation.runner };
  return context.rotationQueue.send(message, { delaySeconds: Math.ceil(delayMs / 1000) });
}

/** The queue consumer: each message runs its chain's steps for a while, then queues the next. */
export async function driveRotations(context: RequestContext, batch: MessageBatch<RotationMessage>): Promise<void> {
  for (const message of batch.messages) {
    try {
      await advance(context, message.body);
      message.ack();
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      console.error(`rotation: a step of tenant ${message.body.tenant_id} failed and will be retried: ${detail}`);
      await storage
        .updateRotation(context.control, { tenantId: message.body.tenant_id, runner: message.body.runner }, { lastError: detail })
        .catch(() => undefined);
      message.retry({ delaySeconds: Math.min(60, 2 ** message.attempts) });
    }
  }
}

/** Called by the cron: a new chain for each rotation whose chain stopped. */
export async function resumeRotations(context: RequestContext, now = Date.now()): Promise<number> {
  const stopped = await storage.stoppedRotations(context.control, now, 100);
  for (const rotation of stopped) await queueStep(context, { tenantId: rotation.tenantId, runner: crypto.randomUUID() }, 0);
  return stopped.length;
}

/** Runs the rotation's steps for up to STEP_BUDGET_MS while `runner` holds it, then queues the next message. */
async function advance(context: RequestContext, { tenant_id: tenantId, runner }: RotationMessage): Promise<void> {
  const startedAt = Date.now();
  let rotation = await storage.claimRotation(context.control, tenantId, runner, startedAt, leaseFor());
  // Done, gone (the tenant was shredded), or another chain holds it.
  if (!rotation) return;
  const ttl = context.config.CREDENTIAL_CACHE_TTL_MS;
  const tenant = await context.forTenant(tenantId);
  // Kinds of records this invocation found none of under the old version: the next steps skip them
  // (anything written meanwhile is new-version; the finishing count catches the rest).
  const finished = new Set<string>();
  let keys: TenantKeys | undefined;
  while (Date.now() - startedAt < STEP_BUDGET_MS) {
    const now = Date.now();
    const waited = now - rotation.stateStartedAt >= ttl;
    let changes: Partial<storage.Rotation>;
    if (rotation.state === "waiting") {
      if (!waited) return later(context, rotation, rotation.stateStartedAt + ttl - now);
      changes = { state: "running", stateStartedAt: now, total: await countSealedBefore(tenant, rotation.toVersion) };
    } else if (rotation.state === "running") {
      keys ??= await storedTenantKeys(tenant, tenantId);
      if (keys.current.version !== rotation.toVersion) {
        throw new Error(`The tenant's newest data key is version ${keys.current.version}, not ${rotation.toVersion}`);
      }
      const { found, reencrypted, stopped } = await reencryptBatch(tenant, keys, rotation.toVersion, finished, startedAt + STEP_BUDGET_MS);
      // Nothing is left under the old version: every record counted at the start is re-sealed (or gone), whatever
      // the counts written so far say (a chain killed between its writes and its count never added that step's).
      changes =
        found === 0 && !stopped
          ? { state: "finishing", stateStartedAt: now, done: rotation.total ?? rotation.done }
          : { done: rotation.done + reencrypted };
    } else if (rotation.state === "finishing") {
      if (!waited) return later(context, rotation, rotation.stateStartedAt + ttl - now);
      if ((await countSealedBefore(tenant, rotation.toVersion)) > 0) {
        // Something was sealed under the old version meanwhile (a request that outlived the wait).
        changes = { state: "running", stateStartedAt: now };
      } else {
        if (await storage.finishRotation(context.control, rotation, now)) credentialsChanged();
        return;
      }
    } else {
      return;
    }
    rotation = await storage.updateRotation(context.control, rotation, {
      ...changes,
      lastError: null,
      leaseUntil: leaseFor(),
    });
    if (!rotation) return;
  }
  await later(context, rotation, 0);
}

/** Hands the chain on to a message `delayMs` from now, extending the lease to cover the wait. */
async function later(context: RequestContext, rotation: storage.Rotation, delayMs: number): Promise<void> {
  const held = await storage.updateRotation(context.control, rotation, { leaseUntil: leaseFor(delayMs) });
  if (held) await queueStep(context, rotation, delayMs);
}
