/**
 * The worker's handlers besides `fetch`: the cron trigger's maintenance and the queue consumers.
 * Each run gets a request context of its own, as a request does.
 */
import { purgeExpiredApplePayTokens } from "../apple-pay/tokens";
import type { AuditMessage } from "../audit/entry";
import { recordEntries } from "../audit/recorder";
import { purgeOldLogs } from "../audit/service";
import { chainPendingEntries, keepDeadEntries, writeAuditBatch } from "../audit/writer";
import { purgeEndedConsoleSessions } from "../console/service";
import type { RequestContext } from "../context";
import type { Bindings } from "../env";
import { purgeExpiredGooglePay } from "../google-pay/service";
import { purgeExpiredReplyCvcs, purgeIdempotencyRecords } from "../idempotency/service";
import { driveRotations, type RotationMessage, resumeRotations } from "../keys/rotation";
import { currentTransformCode } from "../proxies/service";
import { runQueuedReaction, settleReactions } from "../reactors/reactions";
import { currentReactorCode } from "../reactors/service";
import { retireUnusedScripts } from "../sandbox/dispatch-host";
import { purgeExpiredSessions } from "../sessions/service";
import { purgeShreddedTenants } from "../tenants/shred";
import { purgeExpiredIntentCvcs, purgeExpiredTokenIntents } from "../token-intents/service";
import { purgeExpiredCvcs } from "../tokens/cvc";
import { purgeExpiredTokens } from "../tokens/service";
import { deliverWebhooks, recordDeadDeliveries } from "../webhooks/delivery";
import type { WebhookDelivery } from "../webhooks/events";
import { requestContextOf } from "./context";

/**
 * Queues whose every message is one piece of work with a context of its own (its audit trail, the
 * values its errors may not repeat), recorded once the message is handled.
 */
const MESSAGE_CONSUMERS: Record<string, (context: RequestContext, message: Message<unknown>) => Promise<void>> = {
  "token-vault-reactions": runQueuedReaction,
};

/** The queues this worker consumes (wrangler.toml), by name. */
const CONSUMERS: Record<string, (context: RequestContext, batch: MessageBatch<never>) => Promise<void>> = {
  "token-vault-audit": (context, batch) => writeAuditBatch(context, batch as MessageBatch<AuditMessage>),
  "token-vault-audit-dead": (context, batch) => keepDeadEntries(context, batch as MessageBatch<AuditMessage>),
  "token-vault-webhooks": (context, batch) => deliverWebhooks(context, batch as MessageBatch<WebhookDelivery>),
  "token-vault-webhooks-dead": (context, batch) => recordDeadDeliveries(context, batch as MessageBatch<WebhookDelivery>),
  "token-vault-rotation": (context, batch) => driveRotations(context, batch as MessageBatch<RotationMessage>),
};

/**
 * Every 15 minutes (wrangler.toml): purges what expired (tokens, token intents, Apple Pay tokens, Google Pay resources and
 * their cryptograms, sessions and their expiring applications, async reaction results) or was shredded, chains the audit entries left waiting, resumes stopped key rotations, sends
 * again (or fails) the async reactions that stalled, and deletes the dispatch namespace's scripts no owner runs.
 */
export const scheduled: ExportedHandlerScheduledHandler<Bindings> = async (controller, env, ctx) => {
  const context = requestContextOf(env, `cron/${controller.scheduledTime}`);
  context.audit.actor = { id: null, type: "system" };
  const maintenance = Promise.all([
    purgeIdempotencyRecords(context, controller.scheduledTime),
    purgeExpiredTokens(context, controller.scheduledTime),
    purgeExpiredTokenIntents(context, controller.scheduledTime),
    purgeExpiredSessions(context, controller.scheduledTime),
    purgeEndedConsoleSessions(context, controller.scheduledTime),
    purgeExpiredCvcs(context, controller.scheduledTime),
    purgeExpiredIntentCvcs(context, controller.scheduledTime),
    purgeExpiredReplyCvcs(context, controller.scheduledTime),
    purgeExpiredGooglePay(context, controller.scheduledTime),
    chainPendingEntries(context),
    purgeOldLogs(context, controller.scheduledTime),
    purgeShreddedTenants(context),
    resumeRotations(context, controller.scheduledTime),
    settleReactions(context, controller.scheduledTime),
    purgeExpiredApplePayTokens(context, controller.scheduledTime),
    retireScripts(context, controller.scheduledTime),
  ]).then(() => recordEntries(context, context.audit.conclude(undefined, 200)));
  ctx.waitUntil(maintenance);
};

/** With SANDBOX_HOST=dispatch: the scripts no proxy, reactor or formula runs any more leave the namespace. */
async function retireScripts(context: RequestContext, now: number): Promise<void> {
  if (context.config.SANDBOX_HOST !== "dispatch") return;
  await retireUnusedScripts(context.control, context.config, now, async (owner) =>
    owner.kind === "reactor" ? currentReactorCode(context.control, owner) : currentTransformCode(context.control, owner),
  );
}

/** One batch of one of the queues above. */
export const queue: ExportedHandlerQueueHandler<Bindings> = async (batch, env) => {
  const consumeOne = MESSAGE_CONSUMERS[batch.queue];
  if (consumeOne) {
    for (const message of batch.messages) {
      const context = requestContextOf(env, `queue/${batch.queue}/${crypto.randomUUID()}`);
      await consumeOne(context, message);
      await recordEntries(context, context.audit.conclude(undefined, 200));
    }
    return;
  }
  const consume = CONSUMERS[batch.queue];
  if (!consume) throw new Error(`No consumer for queue ${batch.queue}`);
  await consume(requestContextOf(env, `queue/${batch.queue}/${crypto.randomUUID()}`), batch as MessageBatch<never>);
};
