/**
 * Token intents: data a key (a checkout's public key, typically) collected, held encrypted for a day
 * (TOKEN_INTENTS.lifetimeMs), shown only by its facts, usable in detokenization expressions (use.ts),
 * and converted once into a token by a private key (conversion.ts). The cron deletes expired ones.
 */
import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import type { FieldErrors } from "../errors";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { TOKEN_INTENTS } from "../limits";
import { cvcDeadlineOf, purgeExpiredCvcs } from "../tokens/cvc";
import { definitionOf, evaluate, fieldErrorCollector } from "../tokens/definition";
import { WorkBudget } from "../tokens/expressions";
import type { CvcHolders } from "../tokens/storage-purges";
import { fingerprintOf, intentEventData, presentIntent, sealingContext } from "./presentation";
import type { CreateTokenIntent, TokenIntentResponse } from "./schema";
import * as storage from "./storage";

/** Expired intents one purge statement deletes, and how many statements a cron run makes per data database. */
const PURGE_CHUNK = 500;
const PURGE_CHUNKS_PER_RUN = 20;

/** Why an intent id is unknown, for the caller who may have held a live one. */
export const GONE = "a token intent lives a day, and is gone once deleted or converted";

/** The intents' cvcs, which the cron purges as it does tokens'. */
const INTENT_CVC_HOLDERS: CvcHolders = { table: "token_intents", sealingContext };

export async function createTokenIntent(
  context: TenantContext,
  principal: Principal,
  input: CreateTokenIntent,
): Promise<TokenIntentResponse> {
  context.requireWritable();
  const definition = definitionOf({ type: input.type, data: input.data, deduplicate_token: false });
  // The type's own expressions must render on the data, so that the intent converts with the defaults.
  const errors: FieldErrors = {};
  evaluate(definition, fieldErrorCollector(errors), WorkBudget.of(definition.data));
  if (Object.keys(errors).length > 0) throw ValidationError.summarised("The token intent was not created", errors);

  const keys = await context.keys();
  const id = crypto.randomUUID();
  const now = Date.now();
  const row: storage.TokenIntentRow = {
    tenantId: context.tenantId,
    id,
    type: definition.type,
    ciphertext: await keys.encrypt(JSON.stringify(definition.data), sealingContext(id)),
    createdBy: principal.applicationId,
    createdAt: now,
    expiresAt: now + TOKEN_INTENTS.lifetimeMs,
    cvcExpiresAt: cvcDeadlineOf(definition, now, context.config),
  };
  const d1 = context.db.$client;
  const mark = context.takeCommitMark();
  const committed: CommittedIntent = { id };
  try {
    await storage.insertIntent(d1, context.writeFence(now), row, mark ? [await mark.statement(d1, committed)] : []);
  } catch (error) {
    throw mark?.refusalOf(error) ?? error;
  }
  const fingerprint = await fingerprintOf(keys, definition.type, definition.data);
  context.audit.describe({ entityId: id, event: { type: "token-intent.created", data: intentEventData(row, fingerprint) } });
  return presentIntent(principal, row, keys, "token:create");
}

/** What a create's batch wrote: the outcome its idempotency commit mark seals. */
interface CommittedIntent {
  id: string;
}

/**
 * POST /token-intents answered again from its commit mark (src/idempotency/): the attempt that wrote the
 * intent stopped before its answer was saved. An intent gone since cannot be answered.
 */
export async function answerCommittedIntent(context: TenantContext, principal: Principal, outcome: unknown): Promise<TokenIntentResponse> {
  const { id } = outcome as CommittedIntent;
  const row = await storage.findLiveIntent(context.db, context.tenantId, id, Date.now());
  if (!row) {
    throw ConflictError.processed("its answer is not replayed: the token intent it created no longer exists");
  }
  context.audit.describe({ entityId: id });
  return presentIntent(principal, row, await context.keys(), "token:create");
}

export async function getTokenIntent(context: TenantContext, principal: Principal, id: string): Promise<TokenIntentResponse> {
  const row = await storage.findLiveIntent(context.db, context.tenantId, id, Date.now());
  if (!row) throw new NotFoundError(`Token intent ${id}`, GONE);
  return presentIntent(principal, row, await context.keys(), "token:read");
}

export async function deleteTokenIntent(context: TenantContext, id: string): Promise<void> {
  context.requireWritable();
  const now = Date.now();
  if (!(await storage.deleteIntent(context.db.$client, context.writeFence(now), id, now)))
    throw new NotFoundError(`Token intent ${id}`, GONE);
  context.audit.describe({ event: { type: "token-intent.deleted", data: { token_intent: { id } } } });
}

/**
 * Called by the scheduled handler, for every data database: expired intents go, a bounded number per
 * run (a flood of intents is purged over several runs; they are unknown to every read meanwhile).
 */
export async function purgeExpiredTokenIntents(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) {
    for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
      const deleted = await storage.purgeExpiredIntents(db.$client, now, PURGE_CHUNK);
      for (const { tenantId, id } of deleted) {
        context.audit.record({
          tenantId,
          entityType: "token-intent",
          entityId: id,
          operation: "delete",
          message: "Deleted expired token intent",
        });
      }
      purged += deleted.length;
      if (deleted.length < PURGE_CHUNK) break;
    }
  }
  return purged;
}

/** Called by the scheduled handler: a card intent's cvc goes at the deadline a card token's would. */
export function purgeExpiredIntentCvcs(context: RequestContext, now = Date.now()): Promise<number> {
  return purgeExpiredCvcs(context, now, INTENT_CVC_HOLDERS);
}
