import { detectBrand } from "../../elements/frame/cards";
import { accessTo, isBrowserKey, type Principal } from "../auth/access";
import type { TenantKeys } from "../crypto/tenant-keys";
import { isoTime } from "../http/schemas";
import { binLength } from "../tokens/card-filters";
import { definitionOf, evaluate } from "../tokens/definition";
import { WorkBudget } from "../tokens/expressions";
import { showsFingerprint } from "../tokens/presentation";
import { decryptData } from "../tokens/sealing";
import { TOKEN_TYPE_RULES, type TokenType } from "../tokens/types";
import type { BankFacts, CardFacts, TokenIntentResponse } from "./schema";
import type { TokenIntentRow } from "./storage";

/** The additional data an intent's ciphertext is sealed with: never a token id's (those hold no `/`). */
export const sealingContext = (id: string) => `token-intent/${id}`;

/** The intent's data; a card's cvc is left out once its retention window has passed, as a token's is. */
export function intentData(keys: TenantKeys, row: Pick<TokenIntentRow, "id" | "ciphertext" | "cvcExpiresAt">): Promise<unknown> {
  return decryptData(keys, { id: sealingContext(row.id), ciphertext: row.ciphertext, cvcExpiresAt: row.cvcExpiresAt });
}

/** The fingerprint a token of this type and data gets with the type's expression: what a conversion with the defaults answers. */
export async function fingerprintOf(keys: TenantKeys, type: TokenType, data: unknown): Promise<string> {
  const definition = definitionOf({ type, data, deduplicate_token: false });
  // The intent's data passed these expressions when it was created.
  const evaluated = evaluate(definition, () => {}, WorkBudget.of(data));
  return keys.fingerprint(type, evaluated.fingerprintSource);
}

/**
 * The intent as the caller may see it: never its data. Its facts and fingerprint are shown as a token
 * of its type in the type's container would be, under the caller's rule for `permission` there
 * (token:create for the creator's answer, which sent the data; token:read afterwards): a BIN only under
 * reveal (with the last four and a fingerprint it leaves a thousand guesses of a 16-digit number, which
 * a key that creates intents could try), the last four and expiry under mask, nothing under redact or
 * without a rule; the fingerprint as showsFingerprint says. A key that lives in a browser (public, or a
 * session's) is shown only what identifies the intent: its page chose where each typed value went, so
 * any fact could be part of a value it put into a card number (docs/security.md, rule 8).
 */
export async function presentIntent(
  principal: Principal,
  row: TokenIntentRow,
  keys: TenantKeys,
  permission: "token:create" | "token:read",
): Promise<TokenIntentResponse> {
  const type = row.type as TokenType;
  const identity = {
    id: row.id,
    tenant_id: row.tenantId,
    type,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
    expires_at: isoTime(row.expiresAt)!,
  };
  const transform = isBrowserKey(principal)
    ? "redact"
    : (accessTo(principal, permission, [TOKEN_TYPE_RULES[type].container], row.id) ?? "redact");
  if (transform === "redact") return identity;
  const data = await intentData(keys, row);
  const card = cardFactsOf(type, data, transform);
  const bank = bankFactsOf(type, data);
  return {
    ...identity,
    ...(card ? { card } : {}),
    ...(bank ? { bank } : {}),
    ...(showsFingerprint(principal, transform) ? { fingerprint: await fingerprintOf(keys, type, data) } : {}),
  };
}

/**
 * A card's facts: its last four, brand (by the frames' own table, elements/frame/cards.ts: the brand the
 * shopper's frame showed) and expiry, and under reveal its BIN (6 digits, or 8 from 16 digits on, as
 * `card_bin`).
 */
export function cardFactsOf(type: TokenType, data: unknown, transform: "reveal" | "mask"): CardFacts | undefined {
  const card = type === "card" ? (data as { number: string; expiration_month: number; expiration_year: number }) : undefined;
  const number = type === "card_number" ? (data as string) : card?.number;
  if (number === undefined) return undefined;
  const brand = detectBrand(number).rules?.brand;
  return {
    ...(transform === "reveal" ? { bin: number.slice(0, binLength(number.length)) } : {}),
    last4: number.slice(-4),
    ...(card ? { expiration_month: card.expiration_month, expiration_year: card.expiration_year } : {}),
    ...(brand ? { brand } : {}),
  };
}

/**
 * A bank account's facts: its routing number (which the type's mask shows whole too) and the last four
 * of the account, unless those are all of it: facts, like masks, never show a whole value.
 */
export function bankFactsOf(type: TokenType, data: unknown): BankFacts | undefined {
  if (type !== "bank") return undefined;
  const bank = data as { routing_number: string; account_number: string };
  const account = bank.account_number;
  return { routing_number: bank.routing_number, ...(account.length > 4 ? { account_number_last4: account.slice(-4) } : {}) };
}

/** An intent as webhook events describe it: who made it and when, with its fingerprint (events go to the tenant's own endpoints), never its data. */
export function intentEventData(row: TokenIntentRow, fingerprint: string): Record<string, unknown> {
  return {
    token_intent: {
      id: row.id,
      type: row.type,
      fingerprint,
      created_by: row.createdBy,
      created_at: isoTime(row.createdAt),
      expires_at: isoTime(row.expiresAt),
    },
  };
}
