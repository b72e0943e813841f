/**
 * Reading tokens to use them (`token:use`): what detokenization substitutes, and what a stored
 * answer (a replayed idempotent answer, an async reaction's result) checks again.
 */
import { isBrowserKey, type Principal, useTransform } from "../auth/access";
import type { TenantContext } from "../context";
import { ForbiddenError, ProblemError, type RevealedValues, type ShownToken, ValidationError } from "../errors";
import { auditFieldsOf, isoTime } from "../http/schemas";
import { hasCvc } from "./cvc";
import { normalTokenId } from "./id-format";
import { containersOf, metadataOf, shownData } from "./presentation";
import type { TokenResponse } from "./schema";
import { decryptData } from "./sealing";
import * as storage from "./storage";
import type { TokenType } from "./types";

/**
 * Detokenization: the data of each token by id, under the principal's token:use transform. An
 * unknown, deleted or expired id is a 400; a token the principal may not use (no rule, or a rule
 * that redacts it, or masks a token without a mask) is a 403. One query for all ids.
 */
export async function useTokens(context: TenantContext, principal: Principal, ids: string[]): Promise<Map<string, unknown>> {
  const used = await use(context, principal, ids, await usableRows(context, ids));
  return new Map(used.map(({ id, data }) => [id, data]));
}

/**
 * A token whole, as the original docs' token list of POST /detokenize answers it: its data as the
 * caller's token:use rule shows it, with what describes the token, never its fingerprint or its
 * expressions (token:use hands out data to use, not the means to compare or rebuild it).
 */
export type UsedToken = Pick<
  TokenResponse,
  | "id"
  | "type"
  | "tenant_id"
  | "data"
  | "containers"
  | "metadata"
  | "expires_at"
  | "created_by"
  | "created_at"
  | "modified_by"
  | "modified_at"
>;

/** Detokenization of whole tokens by id (the token list of POST /detokenize), under the same rules as useTokens. */
export async function useWholeTokens(context: TenantContext, principal: Principal, ids: string[]): Promise<Map<string, UsedToken>> {
  const rows = await storage.liveTokens(context.db, context.tenantId, [...new Set(ids.map(normalTokenId))], Date.now());
  const used = await use(context, principal, ids, new Map(rows.map((row) => [row.id, row])));
  return new Map(
    used.map(({ id, row, data }) => [
      id,
      {
        id: row.id,
        type: row.type as TokenType,
        tenant_id: row.tenantId,
        data,
        containers: containersOf(row),
        metadata: metadataOf(row),
        expires_at: isoTime(row.expiresAt),
        ...auditFieldsOf(row),
      },
    ]),
  );
}

/** Each id's row and data as the principal may use it (checked, shown, audited), for the rows read. */
async function use<Row extends storage.UsableToken>(
  context: TenantContext,
  principal: Principal,
  ids: string[],
  byId: Map<string, Row>,
): Promise<{ id: string; row: Row; data: unknown }[]> {
  const usable = ids.map((id) => ({ id, ...checkedUse(principal, id, byId.get(normalTokenId(id))) }));
  const keys = await context.keys();
  for (const { row } of usable)
    context.audit.record({ entityType: "token", entityId: row.id, operation: "use", message: "Used token (detokenized)" });
  const shown = await Promise.all(usable.map(({ row, transform }) => shownData(row, transform, () => decryptData(keys, row))));
  return usable.map(({ id, row, transform }, i) => {
    // A stored mask that no longer evaluates shows nothing, as a redacting rule would.
    if (!("data" in shown[i]!)) throw new ForbiddenError(`The token:use rule for token ${id} redacts its data`);
    const { data } = shown[i]!;
    context.revealed.add(data);
    context.revealed.tokens.set(row.id, { transform, cvcExpiresAt: row.cvcExpiresAt !== null && hasCvc(data) ? row.cvcExpiresAt : null });
    return { id, row, data };
  });
}

/**
 * What a request detokenized for its caller, kept beside a stored answer that may show it (sealed
 * there: an alias id can be derived from data), so that whoever reads the answer later is checked again.
 */
export interface Detokenized {
  /** How it showed each token, by id. */
  tokens: Record<string, ShownToken["transform"]>;
  /** What it showed held a card's cvc, which the answer may hold in any shape. */
  cvc: boolean;
}

/** What the request detokenized so far; null when nothing. */
export function detokenizedOf(revealed: RevealedValues): Detokenized | null {
  const shown = [...revealed.tokens];
  if (shown.length === 0) return null;
  return {
    tokens: Object.fromEntries(shown.map(([id, token]) => [id, token.transform])),
    cvc: shown.some(([, token]) => token.cvcExpiresAt !== null),
  };
}

/** The earliest deadline of a card cvc the request detokenized; null when it detokenized none. */
export function earliestCvcDeadline(revealed: RevealedValues): number | null {
  const deadlines = [...revealed.tokens.values()].flatMap((token) => (token.cvcExpiresAt === null ? [] : [token.cvcExpiresAt]));
  return deadlines.length === 0 ? null : Math.min(...deadlines);
}

/**
 * Why a fresh detokenization by the principal would now refuse a token an earlier one showed, or
 * show less of it (masked where it was revealed); null when it would show each as before.
 */
export async function shownLessNow(
  context: TenantContext,
  principal: Principal,
  shown: Record<string, ShownToken["transform"]>,
): Promise<string | null> {
  const ids = Object.keys(shown);
  const byId = await usableRows(context, ids);
  for (const id of ids) {
    try {
      const { transform } = checkedUse(principal, id, byId.get(id));
      if (shown[id] === "reveal" && transform !== "reveal") return `The token:use rule for token ${id} now masks its data`;
    } catch (error) {
      if (error instanceof ProblemError) return error.message;
      throw error;
    }
  }
  return null;
}

/** The live tokens among the ids, by normal id; only the columns detokenization reads, as it runs on every proxied call with references. */
async function usableRows(context: TenantContext, ids: string[]): Promise<Map<string, storage.UsableToken>> {
  const wanted = [...new Set(ids.map(normalTokenId))];
  const rows = await storage.usableTokens(context.db.$client, context.tenantId, wanted, Date.now());
  return new Map(rows.map((row) => [row.id, row]));
}

/** The token and how a detokenization by the principal shows it: a 400 when it is gone, a 403 when its rule redacts it. */
function checkedUse<Row extends storage.UsableToken>(
  principal: Principal,
  id: string,
  row: Row | undefined,
): { row: Row; transform: ShownToken["transform"] } {
  const unknown = () => new ValidationError(`Token ${id} does not exist or has expired`);
  if (!row) throw unknown();
  // A browser's key learns nothing of a token it may not use, not even that it exists.
  const hidden = isBrowserKey(principal);
  let transform: ShownToken["transform"] | "redact";
  try {
    transform = useTransform(principal, row.id, containersOf(row));
  } catch (error) {
    throw hidden && error instanceof ForbiddenError ? unknown() : error;
  }
  if (transform === "redact" || (transform === "mask" && row.mask === null)) {
    throw hidden ? unknown() : new ForbiddenError(`The token:use rule for token ${id} redacts its data`);
  }
  return { row, transform };
}
