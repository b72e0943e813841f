/**
 * The audit queue's consumer: the one writer of each tenant's chain.
 *
 * A batch's entries are grouped by tenant, and each tenant's are appended chunk by chunk
 * (src/db/chunks.ts: one D1 value carries at most 2 MB, and under load a batch carries
 * megabytes of one tenant's entries). The chain has one writer at a time per tenant without a lock:
 * for each chunk a writer reads the head, numbers the chunk's entries from head+1 and appends them
 * with the head's move in one atomic batch. (tenant_id, seq) is the primary key, so when two
 * consumer invocations race for one tenant, the second batch fails whole; that writer re-reads the
 * head and chains its chunk after the winner's. Entries are chained in the order they are written,
 * which is the order their requests reached the queue up to the batching.
 *
 * A message carries the entries of one send (src/audit/recorder.ts, AuditMessage), possibly of several tenants.
 * Queues deliver at least once: an entry whose id is already in the log is skipped, so a
 * redelivered message, or one retried for another tenant's sake, is written once. A chunk either
 * is appended whole with its head or not at all: when one fails, the chunks before it stay chained,
 * and the retry skips their entries and chains the rest after them. Entries that succeed and carry
 * an event go on to the tenant's webhooks once their chunk is in the log.
 *
 * Entries the queue refused wait in audit_pending; each chunk chains up to PENDING_PER_APPEND of
 * the tenant's with its own entries, as many as the chunk has room for, and removes them in the
 * same batch; the cron chains those of tenants that see no traffic, chunk by chunk for up to
 * PENDING_DRAIN_MS. Every batch written to a tenant's data database passes its write fence
 * (src/db/write-fence.ts), so none lands in a database a move has left behind.
 */
import type { RequestContext, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { CHUNK_ROWS, chunked, fitting } from "../db/chunks";
import type { WriteFence } from "../db/write-fence";
import { ConfigurationError, NotFoundError, TenantMovingError } from "../errors";
import { enqueueWebhookEvents } from "../webhooks/events";
import { type ChainedEntry, extend, GENESIS, headMac } from "./chain";
import { type AuditEntry, type AuditMessage, byTenant, DEPLOYMENT_TENANT, entriesOf } from "./entry";
import * as storage from "./storage";

/** A writer that loses the race for the head this many times in a row leaves its batch to a retry. */
const ATTEMPTS = 5;
/**
 * How long entries of a moving tenant wait before the next try: the write block of a move lasts two
 * credential time to lives and the copy of the last changes. With the queue's 100 retries and the
 * dead-letter consumer's 20, a move may block writes for well over five minutes (default TTL)
 * before an entry could be given up.
 */
function movingRetrySeconds(context: RequestContext): number {
  return Math.ceil((2 * context.config.CREDENTIAL_CACHE_TTL_MS) / 1000) + 1;
}
/** Entries of audit_pending each chunk the queue's writer appends takes along, room permitting: the cron drains the rest. */
const PENDING_PER_APPEND = 100;
/**
 * How long one cron run chains entries waiting in audit_pending, in wall time: a chunk is two round
 * trips, so 10 s drain some tens of thousands of entries, while the run (every 15 minutes, beside
 * the other purges) stays short and far inside the cron's CPU time. What is left waits for the next
 * run, or goes along with the tenant's next appends.
 */
const PENDING_DRAIN_MS = 10_000;

export async function writeAuditBatch(context: RequestContext, batch: MessageBatch<AuditMessage>): Promise<void> {
  // A message may carry entries of several tenants: it is acknowledged when each of their appends succeeded.
  const delays = new Map<Message<AuditMessage>, number>();
  await Promise.all(
    [...byTenant(carried(batch), ({ entry }) => entry.tenant_id)].map(async ([tenantId, items]) => {
      try {
        await appendEntries(
          context,
          tenantId,
          items.map(({ entry }) => entry),
        );
      } catch (error) {
        // A move blocking the tenant's writes, or a database that failed: the queue delivers again later.
        const delaySeconds = error instanceof TenantMovingError ? movingRetrySeconds(context) : 5;
        console.warn(`audit: ${items.length} entries of tenant ${tenantId} wait for a retry: ${(error as Error).message}`);
        for (const { message } of items) delays.set(message, Math.max(delays.get(message) ?? 0, delaySeconds));
      }
    }),
  );
  settle(batch, delays);
}

/**
 * The audit dead-letter queue's consumer: entries the writer gave up on wait in audit_pending for
 * the next append or the cron, a moving tenant's too (keepWaitingEntries). None is left to a retry:
 * the queue after the dead-letter one is none, and Queues drops what its last delivery retries.
 */
export async function keepDeadEntries(context: RequestContext, batch: MessageBatch<AuditMessage>): Promise<void> {
  for (const [tenantId, items] of byTenant(carried(batch), ({ entry }) => entry.tenant_id)) {
    await keepWaitingEntries(
      context,
      tenantId,
      items.map(({ entry }) => entry),
    );
  }
  for (const message of batch.messages) message.ack();
}

/**
 * Keeps entries in the tenant's audit_pending for the writer or the cron to chain, a chunk at a
 * time, each chunk looking up where (as appendEntries does, for the same reason). While a move
 * blocks or fences the tenant, the chunk goes to the control database's audit_pending instead: no
 * move copies or purges that, and the cron hands its entries over to the tenant's chain once the
 * tenant can be written again (chainPendingEntries).
 */
export async function keepWaitingEntries(context: RequestContext, tenantId: string, entries: AuditEntry[]): Promise<void> {
  for (const chunk of storage.pendingChunks(entries)) {
    try {
      const place = await chainPlace(context, tenantId);
      await storage.keepPending(place.d1, fenceOf(place), chunk);
    } catch (error) {
      if (!(error instanceof TenantMovingError)) throw error;
      await storage.keepPending(context.control.$client, null, chunk);
    }
  }
}

/** Every entry of the batch with the message that carries it. */
function carried(batch: MessageBatch<AuditMessage>): { message: Message<AuditMessage>; entry: AuditEntry }[] {
  return batch.messages.flatMap((message) => entriesOf(message.body).map((entry) => ({ message, entry })));
}

/** Acknowledges each message, or has it delivered again after its delay when one of its entries must wait. */
function settle(batch: MessageBatch<AuditMessage>, delays: Map<Message<AuditMessage>, number>): void {
  for (const message of batch.messages) {
    const delaySeconds = delays.get(message);
    if (delaySeconds === undefined) message.ack();
    else message.retry({ delaySeconds });
  }
}

/**
 * Chains the entries waiting in audit_pending (the cron), for tenants that sent nothing since: a
 * chunk of each tenant's in turn, every database at once, until none wait or PENDING_DRAIN_MS have
 * passed. A tenant that cannot be written now (being moved, its database failing) waits for the next run.
 */
export async function chainPendingEntries(context: RequestContext): Promise<void> {
  const deadline = Date.now() + PENDING_DRAIN_MS;
  const databases = new Set([context.control.$client, ...context.dataDatabases().map((db) => db.$client)]);
  await Promise.all(
    [...databases].map(async (d1) => {
      let tenants = await storage.tenantsWithPending(d1);
      while (tenants.length > 0 && Date.now() < deadline) {
        const waiting: string[] = [];
        for (const tenantId of tenants) {
          if (Date.now() >= deadline) break;
          if (await chainWaiting(context, d1, tenantId)) waiting.push(tenantId);
        }
        tenants = waiting;
      }
    }),
  );
}

/**
 * Chains a chunk of the tenant's entries waiting in `d1`'s audit_pending; whether there were any
 * (more may wait). Entries kept in the control database while the tenant moved (keepWaitingEntries)
 * are appended to the tenant's chain where it is now, then removed: a crash between leaves them to be
 * appended again, which skips entries already in the log.
 */
async function chainWaiting(context: RequestContext, d1: D1Database, tenantId: string): Promise<boolean> {
  try {
    const writer = await chainWriter(context, tenantId);
    if (writer === null) return false;
    if (writer.d1 === d1) return (await appendChunk(context, writer, tenantId, [], CHUNK_ROWS)) > 0;
    const { pending } = await storage.chainState(d1, tenantId, [], CHUNK_ROWS);
    if (pending.length === 0) return false;
    await appendEntries(context, tenantId, pending);
    await storage.removePending(
      d1,
      tenantId,
      pending.map(({ id }) => id),
    );
    return true;
  } catch (error) {
    console.warn(`audit: the entries of tenant ${tenantId} waiting in audit_pending wait for the next run: ${(error as Error).message}`);
    return false;
  }
}

/**
 * Appends the entries not yet in the tenant's chain (and some waiting in audit_pending), a chunk at a
 * time, then raises their webhook events. Each chunk looks up where the chain is written: a batch of
 * many chunks can outlast a move's wait for its block to be seen, and the chunks written to the old
 * database after that would be purged with it (test/scale/moves-audit.test.ts).
 */
export async function appendEntries(context: RequestContext, tenantId: string, entries: AuditEntry[]): Promise<void> {
  for (const chunk of chunked(entries, storage.loggedBytes)) {
    const writer = await chainWriter(context, tenantId);
    if (!writer) {
      // A shredded tenant: its log is being purged with the rest of its data.
      console.warn(`audit: ${chunk.length} entries of tenant ${tenantId} dropped: the tenant was shredded`);
      continue;
    }
    await appendChunk(context, writer, tenantId, chunk, PENDING_PER_APPEND);
  }
}

/** Where the tenant's chain is written and its keys. */
interface ChainWriter extends ChainPlace {
  keys: TenantKeys;
}

/** Where the tenant's chain is written and its keys; null for a tenant that was shredded. */
async function chainWriter(context: RequestContext, tenantId: string): Promise<ChainWriter | null> {
  const place = await chainPlace(context, tenantId);
  const keys = await context.keysOf(tenantId).catch((error: unknown) => {
    if (error instanceof NotFoundError) return null;
    throw error;
  });
  return keys && { ...place, keys };
}

/**
 * Appends one chunk of entries, those not in the log yet, with up to `pendingLimit` of the
 * tenant's waiting in audit_pending that the chunk has room for, in one atomic batch; then raises
 * their webhook events. Answers how many waiting entries it removed from audit_pending.
 */
async function appendChunk(
  context: RequestContext,
  writer: ChainWriter,
  tenantId: string,
  entries: AuditEntry[],
  pendingLimit: number,
): Promise<number> {
  const { d1, keys } = writer;
  const given = new Set(entries.map(({ id }) => id));
  const used = { rows: entries.length, bytes: entries.reduce((bytes, entry) => bytes + storage.loggedBytes(entry), 0) };
  let raised: AuditEntry[] = entries;
  let removed: AuditEntry[] = [];
  for (let attempt = 1; ; attempt++) {
    const { chain, written, pending } = await storage.chainState(
      d1,
      tenantId,
      [...given],
      Math.min(pendingLimit, CHUNK_ROWS - entries.length),
    );
    // Waiting entries this chunk carries already, or the log holds, need no room: they only leave audit_pending.
    const duplicates = pending.filter(({ id }) => given.has(id) || written.has(id));
    const taken = fitting(
      pending.filter(({ id }) => !given.has(id) && !written.has(id)),
      storage.loggedBytes,
      used,
    );
    removed = [...duplicates, ...taken];
    raised = [...entries, ...removed.filter(({ id }) => !given.has(id))];
    const fresh = raised.filter(({ id }) => !written.has(id));
    if (fresh.length === 0 && removed.length === 0) break;
    const chained = fresh.length > 0 ? await extend(keys, { seq: chain?.headSeq ?? 0, hash: chain?.headHash ?? GENESIS }, fresh) : [];
    const last = chained.at(-1);
    try {
      await storage.append(
        d1,
        fenceOf(writer),
        tenantId,
        chain,
        chained,
        last ? await sealHead(keys, tenantId, chain, last) : null,
        removed.map(({ id }) => id),
      );
      break;
    } catch (error) {
      if (attempt >= ATTEMPTS || !/constraint/i.test(String(error))) throw error;
    }
  }
  const events = raised.filter((entry) => entry.event !== undefined);
  if (events.length > 0 && tenantId !== DEPLOYMENT_TENANT) await enqueueWebhookEvents(context, events);
  return removed.length;
}

/**
 * The head after `last`, with its MAC. A head whose own MAC does not hold (a chain written before
 * heads carried one, or a head moved in the database) is chained after anyway, since dropping
 * entries would be worse, but the new head records it: verification then reports the link after it
 * as one a cut tail may hide, instead of the writer vouching for whatever head it found.
 */
async function sealHead(keys: TenantKeys, tenantId: string, chain: storage.Chain | null, last: ChainedEntry): Promise<storage.SealedHead> {
  let macSince = 0;
  if (chain) {
    const found = { seq: chain.headSeq, hash: chain.headHash, macSince: chain.headMacSince };
    const holds = chain.headMac !== null && chain.headMac === (await headMac(keys, found));
    if (!holds) {
      console.warn(
        `audit: the head of tenant ${tenantId}'s chain (seq ${chain.headSeq}) has no valid MAC; verification will report the link after it`,
      );
    }
    macSince = holds ? chain.headMacSince : chain.headSeq;
  }
  const head = { seq: last.seq, hash: last.hash, macSince };
  return { ...head, mac: await headMac(keys, head) };
}

/** The database holding a tenant's log, and the tenant whose write fence its batches pass (null: the control database's own). */
interface ChainPlace {
  d1: D1Database;
  tenant: TenantContext | null;
}

/** The fence a batch written to the chain's place now passes. */
const fenceOf = ({ tenant }: ChainPlace): WriteFence | null => tenant?.writeFence(Date.now()) ?? null;

/**
 * Where the tenant's log is: its data database, or the control database for the deployment's own
 * entries. While a move blocks the tenant's writes, a TenantMovingError, as when the data database's
 * write fence refuses a batch: the entries wait (the queue delivers them again, or keepWaitingEntries
 * keeps them in the control database).
 */
async function chainPlace(context: RequestContext, tenantId: string): Promise<ChainPlace> {
  const control = { d1: context.control.$client, tenant: null };
  if (tenantId === DEPLOYMENT_TENANT) return control;
  const tenant = await context.forTenant(tenantId).catch((error: unknown) => {
    // A tenant the directory no longer knows: its last entries stay in the control database.
    if (error instanceof ConfigurationError) return null;
    throw error;
  });
  if (tenant === null) return control;
  tenant.requireWritable();
  return { d1: context.dataDatabase(tenant.dataBinding), tenant };
}
