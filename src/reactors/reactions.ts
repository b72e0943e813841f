/**
 * Async reactions: POST /reactors/{id}/react-async and GET /reactors/{id}/results/{request_id}.
 *
 * The request does what react does before the code runs (the reactor and its configuration are
 * checked, the args detokenized with the caller's token:use and checked against the request
 * parameters), keeps the args sealed in a pending row of the tenant's data database and sends the
 * reaction's name on the reaction queue. The queue's consumer claims the row, once however often the
 * message comes, runs the code as react does and keeps its answer or its problem, sealed, until the
 * result's retention ends (the cron purges it). A result is read under the reader's own rules, as a
 * replayed idempotent answer is: token:use on every token the reaction detokenized, showing as much.
 */
import { z } from "zod";
import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { utf8 } from "../crypto/encoding";
import type { TenantKeys } from "../crypto/tenant-keys";
import { shownLessNow } from "../detokenization/service";
import type { Config } from "../env";
import { ConflictError, ForbiddenError, NotFoundError, ProblemError, problemOf, TenantMovingError, TooManyRequestsError } from "../errors";
import { isoTime } from "../http/schemas";
import { REACTORS, SANDBOX } from "../limits";
import { CustomResponseError, ScriptFailedError, ScriptInputTooLargeError } from "../sandbox";
import { cvcDeadlineInReply, keysUnlessShredded } from "../tokens/cvc";
import { type Detokenized, detokenizedOf, earliestCvcDeadline } from "../tokens/use";
import type { ReactionResult } from "./schema";
import { findRunnableReactor, prepareReaction, runReaction } from "./service";
import type { ReactionRow } from "./storage-reactions";
import * as storage from "./storage-reactions";

/** What the queue carries: the reaction's name only; the reaction waits in the tenant's data database. */
const ReactionMessageSchema = z.object({ tenantId: z.string(), requestId: z.string() });
export type ReactionMessage = z.infer<typeof ReactionMessageSchema>;

/** A pending reaction older than this may have lost its message: the cron sends it again (a delivery runs it at most once). */
const RESEND_AFTER_MS = 60_000;
/** Reactions the cron sends again, fails or purges per database and step. */
const CRON_CHUNK = 100;
/** Purge steps per database and cron run: at most 5,000 expired results. */
const MAX_PURGE_CHUNKS = 50;

/** Additional data of the sealed columns: a ciphertext copied onto another reaction fails to decrypt. */
export const reactionArgsContext = (id: string) => `reactor-requests/${id}/args`;
export const reactionResultContext = (id: string) => `reactor-requests/${id}/result`;
export const reactionDetokenizedContext = (id: string) => `reactor-requests/${id}/detokenized`;

/** What a reaction keeps: `{tokens, raw}` when completed; the problem (and a custom response) when failed. */
type Outcome = { status: "completed"; body: { tokens: unknown; raw: unknown } } | { status: "failed"; body: FailedBody };
type FailedBody = { error: ReturnType<typeof problemOf>["problem"]; response: ReactionResult["response"] };

/**
 * A run holds its claim this long: the code's wall time, then its tokenize and the writes. Past it,
 * the run stopped without an outcome (its consumer ended) and the cron fails the reaction.
 */
const runLeaseMs = (config: Config) => config.SANDBOX_WALL_TIME_MS + 60_000;

const tooManyOpen = () =>
  new TooManyRequestsError(
    `This tenant already has ${REACTORS.maxOpenAsyncReactions} async reactions waiting or running; nothing was queued`,
    1,
  );

/** Checks the reaction as react would, keeps it pending with its args sealed, and queues it. */
export async function reactAsync(
  context: TenantContext,
  principal: Principal,
  reactorId: string,
  args: Record<string, unknown>,
): Promise<{ asyncReactorRequestId: string }> {
  context.requireWritable();
  const { args: checked } = await prepareReaction(context, principal, reactorId, args);
  const argsJson = JSON.stringify(checked);
  // The sandbox's input bound, told now rather than in the result.
  if (utf8.encode(argsJson).byteLength > SANDBOX.inputMaxBytes) throw new ScriptInputTooLargeError("reactor", SANDBOX.inputMaxBytes);
  const keys = await context.keys();
  const id = crypto.randomUUID();
  const now = Date.now();
  const detokenized = detokenizedOf(context.revealed);
  const row: ReactionRow = {
    tenantId: context.tenantId,
    id,
    reactorId,
    applicationId: principal.applicationId,
    status: "pending",
    // The values the args revealed go with them: the run's errors must not repeat them either.
    args: await keys.encrypt(JSON.stringify({ args: checked, revealed: context.revealed.list() }), reactionArgsContext(id)),
    result: null,
    detokenized: detokenized && (await keys.encrypt(JSON.stringify(detokenized), reactionDetokenizedContext(id))),
    createdAt: now,
    startedAt: null,
    completedAt: null,
    // A detokenized cvc may be anywhere in the result, which must be gone when the cvc is gone from its card.
    expiresAt: Math.min(now + REACTORS.asyncResultRetentionMs, earliestCvcDeadline(context.revealed) ?? Number.POSITIVE_INFINITY),
  };
  const d1 = context.db.$client;
  const mark = context.takeCommitMark();
  const committed = mark && (await mark.statement(d1, { requestId: id }));
  let inserted: boolean;
  try {
    inserted = await storage.insertReaction(d1, context.writeFence(now), row, REACTORS.maxOpenAsyncReactions, committed ? [committed] : []);
  } catch (error) {
    throw mark?.refusalOf(error) ?? error;
  }
  if (!inserted) throw tooManyOpen();
  context.audit.describe({ message: `request ${id}` });
  await send(context, [{ tenantId: context.tenantId, requestId: id }]);
  return { asyncReactorRequestId: id };
}

/** Queues the reactions; a send that fails is logged, and the cron sends the reaction again (it is kept pending). */
async function send(context: RequestContext, messages: ReactionMessage[]): Promise<void> {
  try {
    await context.reactionQueue.sendBatch(messages.map((body) => ({ body })));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    console.error(`[${context.traceId}] async reactions not queued (the cron sends them again): ${reason}`);
  }
}

/**
 * The answer of a react-async whose write was committed with its idempotency claim and never
 * answered: the same request id, while the reaction exists.
 */
export async function answerCommittedReaction(context: TenantContext, outcome: unknown): Promise<{ asyncReactorRequestId: string }> {
  const { requestId } = outcome as { requestId: string };
  if (!(await storage.reactionExists(context.db, context.tenantId, requestId))) {
    throw ConflictError.processed(
      "queued no reaction that still exists (it was one too many, or its result's retention has ended); send it again under a new key",
    );
  }
  return { asyncReactorRequestId: requestId };
}

/** The reaction's status and result, if the principal may see what it detokenized; 404 once its retention ended. */
export async function getReaction(
  context: TenantContext,
  principal: Principal,
  reactorId: string,
  requestId: string,
): Promise<ReactionResult> {
  context.audit.describe({ message: `request ${requestId}` });
  const now = Date.now();
  const row = await storage.findReaction(context.db, context.tenantId, reactorId, requestId);
  const gone = () => new NotFoundError(`Async reaction ${requestId} of reactor ${reactorId}`);
  if (!row || row.expiresAt <= now) throw gone();
  const keys = await context.keys();
  if (row.detokenized !== null) {
    const detokenized = JSON.parse(await keys.decrypt(row.detokenized, reactionDetokenizedContext(row.id))) as Detokenized;
    // A shorter cvc retention in force applies to kept results at once.
    if (detokenized.cvc && row.createdAt + context.config.CARD_CVC_RETENTION_S * 1000 <= now) throw gone();
    const shownLess = await shownLessNow(context, principal, detokenized.tokens);
    if (shownLess !== null) throw new ForbiddenError(`The result of async reaction ${requestId} is not shown to this key: ${shownLess}`);
  }
  const outcome = row.result === null ? null : await openOutcome(keys, row);
  return {
    id: row.id,
    reactor_id: row.reactorId,
    status: row.status,
    tokens: outcome?.status === "completed" ? outcome.body.tokens : null,
    raw: outcome?.status === "completed" ? outcome.body.raw : null,
    error: outcome?.status === "failed" ? outcome.body.error : null,
    response: outcome?.status === "failed" ? outcome.body.response : null,
    created_at: isoTime(row.createdAt)!,
    completed_at: isoTime(row.completedAt),
    expires_at: isoTime(row.expiresAt)!,
  };
}

async function openOutcome(keys: TenantKeys, row: ReactionRow): Promise<Outcome> {
  const body = JSON.parse(await keys.decrypt(row.result!, reactionResultContext(row.id)));
  return row.status === "completed" ? { status: "completed", body } : { status: "failed", body };
}

/**
 * The reaction queue's consumer, for one message: claims the reaction (a message delivered again
 * finds it claimed and does nothing), runs it, and keeps its outcome. Audit entries go on the
 * context's trail, which the handler records.
 */
export async function runQueuedReaction(request: RequestContext, message: Message<unknown>): Promise<void> {
  const parsed = ReactionMessageSchema.safeParse(message.body);
  if (!parsed.success) {
    console.error(`[${request.traceId}] a reaction queue message the vault did not send was dropped`);
    message.ack();
    return;
  }
  const { tenantId, requestId } = parsed.data;
  const context = await request.forTenant(tenantId);
  try {
    context.requireWritable();
  } catch (error) {
    // After the switch the reaction is in the tenant's new database, where the next delivery claims it.
    if (error instanceof TenantMovingError) return message.retry({ delaySeconds: Number(error.headers?.["Retry-After"] ?? 5) });
    throw error;
  }
  const startedAt = Date.now();
  const claimed = await storage.claimReaction(context.db, tenantId, requestId, startedAt);
  if (!claimed) return message.ack();
  request.audit.tenantId = tenantId;
  request.audit.actor = { id: claimed.applicationId, type: "application" };
  const outcome = await outcomeOf(context, claimed);
  const keys = await context.keys();
  const json = JSON.stringify(outcome.body);
  const completedAt = Date.now();
  const finished = await storage.finishReaction(context.db, tenantId, requestId, startedAt, {
    status: outcome.status,
    result: await keys.encrypt(json, reactionResultContext(requestId)),
    completedAt,
    // A card the code tokenized or returned with its cvc: the result goes when that cvc would.
    expiresAt: Math.min(claimed.expiresAt, cvcDeadlineInReply(json, completedAt, context.config) ?? Number.POSITIVE_INFINITY),
  });
  const status = outcome.status === "completed" ? 200 : outcome.body.error.status;
  if (finished) {
    const verb = outcome.status === "completed" ? "Ran" : "Ran (failed)";
    request.audit.record({
      entityType: "reactor",
      entityId: claimed.reactorId,
      operation: "react",
      message: `${verb} async reaction ${requestId}`,
      status,
    });
  }
  message.ack();
}

/** What the run answers: react's answer, or the problem react would have answered (values the args revealed redacted). */
async function outcomeOf(context: TenantContext, claimed: ReactionRow): Promise<Outcome> {
  try {
    const keys = await context.keys();
    const { args, revealed } = JSON.parse(await keys.decrypt(claimed.args!, reactionArgsContext(claimed.id)));
    context.revealed.add(revealed);
    const result = await runReaction(context, await findRunnableReactor(context, claimed.reactorId), args);
    return { status: "completed", body: withinResultLimit(result) };
  } catch (error) {
    const response = error instanceof CustomResponseError ? { status: error.status, headers: error.headers, body: error.body } : null;
    try {
      return { status: "failed", body: { error: problemIn(context, claimed, error), response: response && withinResultLimit(response) } };
    } catch (tooLarge) {
      return { status: "failed", body: { error: problemIn(context, claimed, tooLarge), response: null } };
    }
  }
}

/** The problem react would have answered, with the values the reaction revealed redacted (and logged when a 5xx). */
const problemIn = (context: TenantContext, claimed: ReactionRow, error: unknown) =>
  problemOf(error, context.traceId, `async reaction ${claimed.id}`, context.revealed).problem;

/** What the code answered, if a result may hold it: D1 refuses a value over 2 MB, and a sealed value grows by a third. */
function withinResultLimit<T>(answer: T): T {
  if (utf8.encode(JSON.stringify(answer)).byteLength > REACTORS.asyncResultMaxBytes) {
    throw new ScriptFailedError(
      "reactor",
      `returned a result larger than ${REACTORS.asyncResultMaxBytes} bytes, which an async reaction's result may hold`,
      "Invalid Script Result",
    );
  }
  return answer;
}

/** A run that stopped without an outcome: what its reaction answers from then on. */
class RunStoppedError extends ProblemError {
  constructor() {
    super(
      500,
      "Reaction Stopped",
      "The reaction's run stopped before it finished (its consumer ended): its outcome is unknown, and it is not run again",
    );
  }
}

/**
 * Called by the cron: sends again the reactions pending for long (a queue send that failed, or a
 * message lost), fails those whose run stopped past its lease, and purges the results whose
 * retention ended; each in bounded chunks per data database.
 */
export async function settleReactions(context: RequestContext, now = Date.now()): Promise<void> {
  for (const db of context.dataDatabases()) {
    const waiting = await storage.waitingSince(db, now - RESEND_AFTER_MS, CRON_CHUNK);
    if (waiting.length > 0)
      await send(
        context,
        waiting.map(({ tenantId, id }) => ({ tenantId, requestId: id })),
      );
    for (const stalled of await storage.runningSince(db, now - runLeaseMs(context.config), CRON_CHUNK)) {
      // A shredded tenant's reactions go with its other rows (src/tenants/shred.ts).
      const keys = await keysUnlessShredded(context, stalled.tenantId);
      if (!keys) continue;
      const problem = new RunStoppedError().toProblem();
      const body: FailedBody = { error: problem, response: null };
      const failed = await storage.finishReaction(db, stalled.tenantId, stalled.id, stalled.startedAt!, {
        status: "failed",
        result: await keys.encrypt(JSON.stringify(body), reactionResultContext(stalled.id)),
        completedAt: now,
      });
      if (failed) {
        context.audit.record({
          tenantId: stalled.tenantId,
          entityType: "reactor",
          entityId: stalled.reactorId,
          operation: "react",
          message: `Failed async reaction ${stalled.id}: its run stopped`,
          status: problem.status,
        });
      }
    }
    // Reads already refuse an expired result; what one run leaves, the next purges.
    for (
      let chunk = 0;
      chunk < MAX_PURGE_CHUNKS && (await storage.purgeExpiredReactions(db.$client, now, CRON_CHUNK)) === CRON_CHUNK;
      chunk++
    );
  }
}
