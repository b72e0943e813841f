import { getTableName } from "drizzle-orm";
import type { TokenRow } from "./storage";
import { SIDE_TABLES } from "./storage-writes";

/* What the cron removes: expired tokens with their side rows, and card security codes past their deadline. */

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

/** Cards whose cvc must be gone by `now`, oldest deadline first. */
export async function tokensWithCvcDue(
  d1: D1Database,
  now: number,
  limit: number,
): Promise<Pick<TokenRow, "tenantId" | "id" | "ciphertext">[]> {
  const { results } = await d1
    .prepare(
      "SELECT tenant_id AS tenantId, id, ciphertext FROM tokens WHERE cvc_expires_at <= ? ORDER BY cvc_expires_at, tenant_id, id LIMIT ?",
    )
    .bind(now, limit)
    .all<Pick<TokenRow, "tenantId" | "id" | "ciphertext">>();
  return results;
}

/** Writes the card's data without its cvc, unless the token changed since it was read; 1 or 0. */
export async function replaceCiphertextWithoutCvc(
  d1: D1Database,
  read: Pick<TokenRow, "tenantId" | "id" | "ciphertext">,
  ciphertext: string,
): Promise<number> {
  const result = await d1
    .prepare("UPDATE tokens SET ciphertext = ?, cvc_expires_at = NULL WHERE tenant_id = ? AND id = ? AND ciphertext = ?")
    .bind(ciphertext, read.tenantId, read.id, read.ciphertext)
    .run();
  return result.meta.changes;
}

/**
 * Clears the cvc deadlines of a tenant whose keys were destroyed (crypto-shredded): its cvcs can no
 * longer be read by anyone, and its rows must not stand in the way of other tenants' purge.
 */
export async function forgetCvcDeadlines(d1: D1Database, tenantId: string): Promise<void> {
  await d1.prepare("UPDATE tokens SET cvc_expires_at = NULL WHERE tenant_id = ? AND cvc_expires_at IS NOT NULL").bind(tenantId).run();
}
