import type { RequestContext } from "../context";
import { chunked, jsonBytes, sizedChunks } from "../db/chunks";
import { settleWithin } from "../deadline";
import { type AuditEntry, byTenant } from "./entry";
import { keepWaitingEntries } from "./writer";

/**
 * Cloudflare Queues takes at most 128 KB in one message, and 100 messages and 256 KB in one
 * sendBatch (the margins are for framing).
 */
const MESSAGE_BYTES = 100_000;
const SEND_BATCH_MESSAGES = 100;
const SEND_BATCH_BYTES = 200_000;

/**
 * Entries of this isolate's requests waiting for the next send to their queue; a queue is here while
 * a request has taken that send on. Concurrent requests share one sendBatch: the send is most of what
 * auditing costs a request (docs/decisions.md, "Audit"). Only data is shared, never a promise.
 */
const waitingFor = new WeakMap<Queue, Waiting>();

interface Waiting {
  entries: AuditEntry[];
  /** When the request that took the send on did so. */
  since: number;
}

/**
 * How long a send may stay pending before the next request takes it over: its request's context
 * ended before the send ran (cancelled), and without a taker every later entry of the isolate would
 * wait behind it forever.
 */
const TAKE_OVER_MS = 2_000;

/**
 * How long the request that takes a send on waits before sending: every entry its isolate adds
 * meanwhile goes in the same sendBatch. A send per turn of the event loop carried a few entries each
 * under load, and the queue's broker and consumer cost workerd about 170 µs of CPU a proxy call; a
 * window of 10 ms costs workerd the same CPU a call as 50 ms did, within noise, while 1 ms costs
 * about 14 % more (docs/decisions.md, "The window in production"), so 10 ms it is: the shortest
 * window the hot path allows, as entries waiting in it die with their isolate. No caller waits for
 * it, as the answers have left; a test that waits for its request's `waitUntil` waits the window
 * too. It must stay well under TAKE_OVER_MS, or every healthy send is taken over.
 */
const SEND_WINDOW_MS = 10;

/**
 * Entries one send takes at most: the request that brings the waiting ones to this many sends them
 * at once, so that one request's `waitUntil` does a bounded amount of work, and an isolate that
 * dies loses the entries of fewer requests.
 */
const SEND_AT_MOST = 500;

/**
 * How long a send may take before its entries are kept in audit_pending instead: a send still
 * pending when the runtime ends the request's `waitUntil` (30 s) would be lost without a word. The
 * writer skips an entry whose id is in the log already, so a send that completes after all is
 * chained once.
 */
const SEND_DEADLINE_MS = 10_000;

/**
 * Records a request's entries after its answer has left, so the send costs the caller nothing. The
 * first request to find no send pending takes it on (`waitUntil`) and sends, SEND_WINDOW_MS later,
 * what every request has added by then. Only that request does I/O for the batch, in its own context: the
 * others await nothing (Workers refuse I/O for one request from another's context). When neither the
 * queue nor audit_pending takes the entries, each is written whole to the worker's log, the last
 * place that keeps it: entries hold no sensitive values (test/audit/operations.test.ts scans them).
 */
export function recordAfterAnswer(waitUntil: (promise: Promise<unknown>) => void, context: RequestContext, entries: AuditEntry[]): void {
  if (entries.length === 0 || !context.config.AUDIT_LOG) return;
  const queue = context.auditQueue;
  const waiting = waitingFor.get(queue);
  if (waiting && Date.now() - waiting.since < TAKE_OVER_MS) {
    waiting.entries.push(...entries);
    if (waiting.entries.length >= SEND_AT_MOST) {
      // A full batch: this request sends it now; the taker's send finds what comes after.
      waitingFor.delete(queue);
      waitUntil(logUnrecorded(context, waiting.entries));
    }
    return;
  }
  // None pending, or one whose request never got to send it: this request sends them all.
  waitingFor.set(queue, { entries: [...(waiting?.entries ?? []), ...entries], since: Date.now() });
  waitUntil(sendWaiting(context, queue));
}

async function sendWaiting(context: RequestContext, queue: Queue): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, SEND_WINDOW_MS));
  // Whatever is waiting now, whoever took the send on: each entry is taken once, as reading and
  // deleting happen in one turn.
  const entries = waitingFor.get(queue)?.entries ?? [];
  waitingFor.delete(queue);
  await logUnrecorded(context, entries);
}

/** Records the entries, and writes to the worker's log each one neither the queue nor audit_pending took. */
async function logUnrecorded(context: RequestContext, entries: AuditEntry[]): Promise<void> {
  await recordEntries(context, entries).catch((error: unknown) => {
    const unrecorded = error instanceof UnrecordedEntriesError ? error.entries : entries;
    for (const entry of unrecorded) console.error(`audit: unrecorded entry ${JSON.stringify(entry)}`);
  });
}

/**
 * Sends the entries to the audit queue. When the queue cannot take them (or has not within
 * SEND_DEADLINE_MS), they are written straight to audit_pending in each tenant's database (the
 * control database's while a move blocks the tenant: keepWaitingEntries), for the writer or the cron
 * to chain; when that fails too, UnrecordedEntriesError names the entries
 * neither took (a queue consumer's batch is then retried). One tenant's database failing does not
 * keep the others' entries out of theirs.
 */
export async function recordEntries(context: RequestContext, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0 || !context.config.AUDIT_LOG) return;
  let sent = 0;
  try {
    for (const batch of sendBatches(entries)) {
      const send = context.auditQueue.sendBatch(batch.map((body) => ({ body, contentType: "json" as const })));
      await settleWithin(send, SEND_DEADLINE_MS, () => new Error(`the send took longer than ${SEND_DEADLINE_MS} ms`));
      sent += batch.reduce((count, message) => count + message.length, 0);
    }
  } catch (error) {
    const unsent = entries.slice(sent);
    console.warn(`audit: the queue did not take ${unsent.length} entries (${(error as Error).message}); keeping them in audit_pending`);
    const refused: AuditEntry[] = [];
    let spillError: unknown;
    for (const [tenantId, pending] of byTenant(unsent, (entry) => entry.tenant_id)) {
      try {
        await keepWaitingEntries(context, tenantId, pending);
      } catch (tenantError) {
        console.error(
          `audit: audit_pending of tenant ${tenantId} refused ${pending.length} entries too (${(tenantError as Error).message})`,
        );
        refused.push(...pending);
        spillError = tenantError;
      }
    }
    if (refused.length > 0) throw new UnrecordedEntriesError(refused, spillError);
  }
}

/** Neither the queue nor audit_pending took these entries (the queue may have taken the others). */
class UnrecordedEntriesError extends Error {
  constructor(
    readonly entries: AuditEntry[],
    cause: unknown,
  ) {
    super(`${entries.length} audit entries were not recorded`, { cause });
  }
}

/** The entries cut into messages, and the messages into batches, the queue takes. */
function* sendBatches(entries: AuditEntry[]): Generator<AuditEntry[][]> {
  // Bytes, as the queue counts them: a name or message in another script takes up to 3 a character.
  const messages = sizedChunks(entries, (entry) => jsonBytes(JSON.stringify(entry)) + 1, {
    rows: Number.POSITIVE_INFINITY,
    bytes: MESSAGE_BYTES,
  });
  for (const batch of chunked([...messages], (message) => message.bytes, { rows: SEND_BATCH_MESSAGES, bytes: SEND_BATCH_BYTES })) {
    yield batch.map((message) => message.items);
  }
}
