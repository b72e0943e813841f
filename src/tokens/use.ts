/**
 * Reading tokens to use them (`token:use`): what detokenization substitutes, and what a replayed
 * idempotent answer checks again.
 */
import { isBrowserKey, type Principal, useTransform } from "../auth/access";
import type { TenantContext } from "../context";
import { ForbiddenError, ProblemError, type ShownToken, ValidationError } from "../errors";
import { hasCvc } from "./cvc";
import { normalTokenId } from "./id-format";
import { containersOf, shownData } from "./presentation";
import { decryptData } from "./sealing";
import * as storage from "./storage";

/**
 * Detokenization: the data of each token by id, under the principal's token:use transform. An
 * unknown, deleted or expired id is a 400; a token the principal may not use (no rule, or a rule
 * that redacts it, or masks a token without a mask) is a 403. One query for all ids.
 */
export async function useTokens(context: TenantContext, principal: Principal, ids: string[]): Promise<Map<string, unknown>> {
  const byId = await usableRows(context, ids);
  const usable = ids.map((id) => ({ id, ...checkedUse(principal, id, byId.get(normalTokenId(id))) }));
  const keys = await context.keys();
  for (const { row } of usable)
    context.audit.record({ entityType: "token", entityId: row.id, operation: "use", message: "Used token (detokenized)" });
  const shown = await Promise.all(usable.map(({ row, transform }) => shownData(row, transform, () => decryptData(keys, row))));
  return new Map(
    usable.map(({ id, row, transform }, i) => {
      // A stored mask that no longer evaluates shows nothing, as a redacting rule would.
      if (!("data" in shown[i]!)) throw new ForbiddenError(`The token:use rule for token ${id} redacts its data`);
      const { data } = shown[i]!;
      context.revealed.add(data);
      context.revealed.tokens.set(row.id, { transform, cvcExpiresAt: row.cvcExpiresAt !== null && hasCvc(data) ? row.cvcExpiresAt : null });
      return [id, data];
    }),
  );
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
function checkedUse(
  principal: Principal,
  id: string,
  row: storage.UsableToken | undefined,
): { row: storage.UsableToken; transform: ShownToken["transform"] } {
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
