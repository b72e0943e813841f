import type { RequestContext } from "../context";
import { ciphertextVersion, type TenantKeys } from "../crypto/tenant-keys";
import type { Config } from "../env";
import { NotFoundError } from "../errors";
import { type CvcHolders, cvcsDue, forgetCvcDeadlines, replaceCiphertextWithoutCvc, TOKEN_CVC_HOLDERS } from "./storage-purges";

/*
 * A card's security code may not be kept after authorization (PCI DSS 3.3.1). A card written with
 * a `cvc` carries the time its cvc must be gone (CARD_CVC_RETENTION_S after the data was written);
 * reads leave the cvc out from then on, and the cron rewrites the ciphertext without it. Replies kept
 * for idempotent replays get the same treatment (src/idempotency/service.ts), with the functions below.
 */

/** Rows one query of a cvc purge reads (tokens here, stored replies in src/idempotency/service.ts). */
export const CVC_PURGE_CHUNK = 100;

/** When the definition's cvc must be gone, or null when it holds none. */
export function cvcDeadlineOf(
  definition: { type: string; data: unknown },
  now: number,
  config: Pick<Config, "CARD_CVC_RETENTION_S">,
): number | null {
  return definition.type === "card" && hasCvc(definition.data) ? now + config.CARD_CVC_RETENTION_S * 1000 : null;
}

export function withoutCvc(data: unknown): unknown {
  if (!hasCvc(data)) return data;
  const { cvc: _cvc, ...rest } = data;
  return rest;
}

/**
 * When the earliest card cvc in a reply must be gone, or null when it holds none. A card's window
 * starts at its `created_at`, or at `repliedAt` for a card object without one (a reactor's result).
 */
export function cvcDeadlineInReply(body: string, repliedAt: number, config: Pick<Config, "CARD_CVC_RETENTION_S">): number | null {
  const starts = cardsWithCvcIn(parsedReply(body)).map((card) => {
    const createdAt = typeof card.created_at === "string" ? Date.parse(card.created_at) : Number.NaN;
    return Number.isNaN(createdAt) ? repliedAt : createdAt;
  });
  return starts.length === 0 ? null : Math.min(...starts) + config.CARD_CVC_RETENTION_S * 1000;
}

/** The reply with the cvc of every card in it left out, wherever the card is. */
export function replyWithoutCvcs(body: string): string {
  const reply = parsedReply(body);
  const cards = cardsWithCvcIn(reply);
  if (cards.length === 0) return body;
  for (const card of cards) card.data = withoutCvc(card.data);
  return JSON.stringify(reply);
}

/** The card objects (`type: "card"`, a `data` with a `cvc`) anywhere in a parsed reply. */
function cardsWithCvcIn(value: unknown): Record<string, unknown>[] {
  if (Array.isArray(value)) return value.flatMap(cardsWithCvcIn);
  if (value === null || typeof value !== "object") return [];
  const object = value as Record<string, unknown>;
  const card = object.type === "card" && hasCvc(object.data) ? [object] : [];
  // Bodies are held to MAX_JSON_DEPTH, which bounds the recursion.
  return [...card, ...Object.values(object).flatMap(cardsWithCvcIn)];
}

/** A reply that is not JSON (an empty 204) holds no card. */
function parsedReply(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}

export function hasCvc(data: unknown): data is { cvc: unknown } & Record<string, unknown> {
  return data !== null && typeof data === "object" && Object.hasOwn(data, "cvc");
}

/**
 * Called by the scheduled handler: re-encrypts every card whose cvc window has passed without its
 * cvc, in bounded chunks; tokens unless other `holders` (token intents) are named. A record changed
 * meanwhile is left to its new deadline.
 */
export async function purgeExpiredCvcs(
  context: RequestContext,
  now = Date.now(),
  holders: CvcHolders = TOKEN_CVC_HOLDERS,
): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) {
    for (;;) {
      const due = await cvcsDue(db.$client, holders, now, CVC_PURGE_CHUNK);
      for (const row of due) {
        const keys = await keysUnlessShredded(context, row.tenantId);
        if (keys === null) {
          await forgetCvcDeadlines(db.$client, holders, row.tenantId);
          continue;
        }
        const sealedWith = holders.sealingContext(row.id);
        const data = withoutCvc(JSON.parse(await keys.decrypt(row.ciphertext, sealedWith)));
        // Under the row's own version: its fingerprint and blind indexes were made with it.
        const ciphertext = await keys.encrypt(JSON.stringify(data), sealedWith, ciphertextVersion(row.ciphertext));
        purged += await replaceCiphertextWithoutCvc(db.$client, holders, row, ciphertext);
      }
      if (due.length < CVC_PURGE_CHUNK) break;
    }
  }
  return purged;
}

/** The tenant's keys, or null when they were destroyed (the tenant was crypto-shredded). */
export async function keysUnlessShredded(context: RequestContext, tenantId: string): Promise<TenantKeys | null> {
  try {
    return await context.keysOf(tenantId);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}
