import { getTableName } from "drizzle-orm";
import type { TokenRow } from "./storage";
import { SIDE_TABLES } from "./storage-writes";

/* What the cron removes: expired tokens with their side rows, and card security codes past their deadline (of token intents too). */

const PURGE_CHUNK = 500;

/**
 * Removes tokens whose expiry has passed, with their side rows, in batches of a bounded size so
 * no single transaction grows without limit. Expired tokens are already invisible to every read.
 */
export async function purgeExpiredTokens(d1: D1Database, now: number): Promise<{ tenantId: string; id: string }[]> {
  // Ids are unique per tenant only, so rows are matched on the pair.
  const expired = "SELECT tenant_id, id FROM tokens WHERE expires_at <= ? ORDER BY expires_at, tenant_id, id LIMIT ?";
  const purged: { tenantId: string; id: string }[] = [];
  for (;;) {
    const results = await d1.batch([
      ...SIDE_TABLES.map((table) =>
        d1.prepare(`DELETE FROM ${getTableName(table)} WHERE (tenant_id, token_id) IN (${expired})`).bind(now, PURGE_CHUNK),
      ),
      d1.prepare(`DELETE FROM tokens WHERE (tenant_id, id) IN (${expired}) RETURNING tenant_id AS tenantId, id`).bind(now, PURGE_CHUNK),
    ]);
    const deleted = (results.at(-1)?.results ?? []) as { tenantId: string; id: string }[];
    purged.push(...deleted);
    if (deleted.length < PURGE_CHUNK) return purged;
  }
}

/**
 * A table of sealed records that keep a card's cvc until `cvc_expires_at` (tokens, token intents): its
 * name, and the additional data a record's ciphertext is sealed with.
 */
export interface CvcHolders {
  table: "tokens" | "token_intents";
  sealingContext(id: string): string;
}

/** Tokens are sealed with their id as additional data. */
export const TOKEN_CVC_HOLDERS: CvcHolders = { table: "tokens", sealingContext: (id) => id };

/** Records whose cvc must be gone by `now`, oldest deadline first. */
export async function cvcsDue(
  d1: D1Database,
  holders: CvcHolders,
  now: number,
  limit: number,
): Promise<Pick<TokenRow, "tenantId" | "id" | "ciphertext">[]> {
  const { results } = await d1
    .prepare(
      `SELECT tenant_id AS tenantId, id, ciphertext FROM ${holders.table} WHERE cvc_expires_at <= ? ORDER BY cvc_expires_at, tenant_id, id LIMIT ?`,
    )
    .bind(now, limit)
    .all<Pick<TokenRow, "tenantId" | "id" | "ciphertext">>();
  return results;
}

/** Writes the record's data without its cvc, unless it changed since it was read; 1 or 0. */
export async function replaceCiphertextWithoutCvc(
  d1: D1Database,
  holders: CvcHolders,
  read: Pick<TokenRow, "tenantId" | "id" | "ciphertext">,
  ciphertext: string,
): Promise<number> {
  const result = await d1
    .prepare(`UPDATE ${holders.table} SET ciphertext = ?, cvc_expires_at = NULL WHERE tenant_id = ? AND id = ? AND ciphertext = ?`)
    .bind(ciphertext, read.tenantId, read.id, read.ciphertext)
    .run();
  return result.meta.changes;
}

/**
 * Clears the cvc deadlines of a tenant whose keys were destroyed (crypto-shredded): its cvcs can no
 * longer be read by anyone, and its rows must not stand in the way of other tenants' purge.
 */
export async function forgetCvcDeadlines(d1: D1Database, holders: CvcHolders, tenantId: string): Promise<void> {
  await d1
    .prepare(`UPDATE ${holders.table} SET cvc_expires_at = NULL WHERE tenant_id = ? AND cvc_expires_at IS NOT NULL`)
    .bind(tenantId)
    .run();
}
