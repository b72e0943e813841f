import type { RequestContext } from "../context";
import { ciphertextVersion } from "../crypto/tenant-keys";
import type { Config } from "../env";
import * as storage from "./storage";

/*
 * A card's security code may not be kept after authorization (PCI DSS 3.3.1). A card written with
 * a `cvc` carries the time its cvc must be gone (CARD_CVC_RETENTION_S after the data was written);
 * reads leave the cvc out from then on, and the cron rewrites the ciphertext without it.
 */

const PURGE_CHUNK = 100;

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

function hasCvc(data: unknown): data is { cvc: unknown } & Record<string, unknown> {
  return data !== null && typeof data === "object" && Object.hasOwn(data, "cvc");
}

/**
 * Called by the scheduled handler: re-encrypts every card whose cvc window has passed without its
 * cvc, in bounded chunks. A token changed meanwhile is left to its new deadline.
 */
export async function purgeExpiredCvcs(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (const db of context.dataDatabases()) {
    for (;;) {
      const due = await storage.tokensWithCvcDue(db.$client, now, PURGE_CHUNK);
      for (const row of due) {
        const keys = await context.keysOf(row.tenantId);
        const data = withoutCvc(JSON.parse(await keys.decrypt(row.ciphertext, row.id)));
        // Under the row's own version: its fingerprint and blind indexes were made with it.
        const ciphertext = await keys.encrypt(JSON.stringify(data), row.id, ciphertextVersion(row.ciphertext));
        purged += await storage.replaceCiphertextWithoutCvc(db.$client, row, ciphertext);
      }
      if (due.length < PURGE_CHUNK) break;
    }
  }
  return purged;
}
