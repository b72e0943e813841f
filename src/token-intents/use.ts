/**
 * Using token intents in detokenization expressions (`{{ token_intent: <id> | … }}`): an intent is used
 * as a token of its type would be, in the container that type puts its tokens in, under the caller's
 * token:use rule there. And what a replayed idempotent answer checks again of the tokens and intents
 * its request detokenized.
 */
import { isBrowserKey, type Principal, useTransform } from "../auth/access";
import type { TenantContext } from "../context";
import { ForbiddenError, ProblemError, type ShownToken, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { hasCvc } from "../tokens/cvc";
import { maskColumnOf } from "../tokens/mask-templates";
import { shownData } from "../tokens/presentation";
import { TOKEN_TYPE_RULES, type TokenType } from "../tokens/types";
import { shownLessNow as tokensShownLessNow } from "../tokens/use";
import { intentData } from "./presentation";
import * as storage from "./storage";

/**
 * How a request's record of what it detokenized (src/errors.ts, RevealedValues.tokens) names an intent:
 * `|` is in no token id, so an intent never passes for a token of a chosen id.
 */
const REFERENCE_PREFIX = "token_intent|";
export const intentReference = (id: string) => `${REFERENCE_PREFIX}${id}`;

/**
 * The intents by id, each as its expression reads it: its id, tenant, type, creator, times and data,
 * the data under the principal's token:use rule for its type's container. An unknown, expired or
 * another tenant's id is a 400, as an unknown token is, and so is every intent to a key that lives in a
 * browser: the page's own shoppers made them, and a session key learns nothing of which exist. A rule
 * that does not grant token:use there is a 403, one that redacts (or masks a type without a mask) too.
 */
export async function useTokenIntents(context: TenantContext, principal: Principal, ids: string[]): Promise<Map<string, unknown>> {
  const rows = new Map(
    (await storage.liveIntents(context.db.$client, context.tenantId, [...new Set(ids)], Date.now())).map((row) => [row.id, row]),
  );
  const keys = await context.keys();
  const used = new Map<string, unknown>();
  for (const id of ids) {
    const row = rows.get(id);
    if (!row || isBrowserKey(principal)) throw new ValidationError(`Token intent ${id} does not exist or has expired`);
    const { transform, mask } = useOf(principal, row);
    const shown = await shownData({ mask }, transform, () => intentData(keys, row));
    if (transform === "redact" || !("data" in shown))
      throw new ForbiddenError(`The token:use rule for token intent ${id} redacts its data`);
    context.audit.record({ entityType: "token-intent", entityId: id, operation: "use", message: "Used token intent (detokenized)" });
    context.revealed.add(shown.data);
    context.revealed.tokens.set(intentReference(id), {
      transform,
      cvcExpiresAt: row.cvcExpiresAt !== null && hasCvc(shown.data) ? row.cvcExpiresAt : null,
    });
    used.set(id, {
      id: row.id,
      tenant_id: row.tenantId,
      type: row.type,
      data: shown.data,
      created_by: row.createdBy,
      created_at: isoTime(row.createdAt),
      expires_at: isoTime(row.expiresAt),
    });
  }
  return used;
}

/** How the principal may use the intent: its token:use transform in the type's container (a 403 without one), and the type's mask. */
function useOf(principal: Principal, row: storage.TokenIntentRow): { transform: ShownToken["transform"] | "redact"; mask: string | null } {
  const rules = TOKEN_TYPE_RULES[row.type as TokenType];
  return { transform: useTransform(principal, row.id, [rules.container]), mask: maskColumnOf(rules.mask) };
}

/**
 * Why a fresh detokenization by the principal would now refuse a token or intent an earlier one showed,
 * or show less of it; null when it would show each as before. An intent gone since (converted, deleted,
 * expired) is refused.
 */
export async function shownLessNow(
  context: TenantContext,
  principal: Principal,
  shown: Record<string, ShownToken["transform"]>,
): Promise<string | null> {
  const tokens = Object.fromEntries(Object.entries(shown).filter(([reference]) => !reference.startsWith(REFERENCE_PREFIX)));
  const intents = Object.keys(shown).filter((reference) => reference.startsWith(REFERENCE_PREFIX));
  if (intents.length > 0) {
    const ids = intents.map((reference) => reference.slice(REFERENCE_PREFIX.length));
    const rows = new Map((await storage.liveIntents(context.db.$client, context.tenantId, ids, Date.now())).map((row) => [row.id, row]));
    for (const id of ids) {
      const row = rows.get(id);
      if (!row) return `Token intent ${id} does not exist or has expired`;
      try {
        const { transform, mask } = useOf(principal, row);
        if (transform === "redact" || (transform === "mask" && mask === null))
          return `The token:use rule for token intent ${id} redacts its data`;
        if (shown[intentReference(id)] === "reveal" && transform !== "reveal")
          return `The token:use rule for token intent ${id} now masks its data`;
      } catch (error) {
        if (error instanceof ProblemError) return error.message;
        throw error;
      }
    }
  }
  return tokensShownLessNow(context, principal, tokens);
}
