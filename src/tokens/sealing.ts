import type { TenantKeys } from "../crypto/tenant-keys";
import { withoutCvc } from "./cvc";
import type { Evaluated, TokenDefinition } from "./definition";
import { maskColumnOf } from "./masks";
import type { SealedToken, TokenRow } from "./storage";

/** The columns a token carries besides its definition: who wrote it when, and its cvc deadline. */
export type TokenStamp = Pick<TokenRow, "id" | "tenantId" | "createdBy" | "createdAt" | "modifiedBy" | "modifiedAt" | "cvcExpiresAt">;

/**
 * The token as stored: the data encrypted under the tenant's key (the id as additional data), the
 * fingerprint and search values as keyed HMACs, metadata lower-cased for search.
 */
export async function sealToken(
  keys: TenantKeys,
  definition: TokenDefinition,
  evaluated: Evaluated,
  stamp: TokenStamp,
): Promise<SealedToken> {
  const [ciphertext, fingerprints, blindIndexes] = await Promise.all([
    keys.encrypt(JSON.stringify(definition.data), stamp.id),
    keys.fingerprints(definition.type, evaluated.fingerprintSource),
    Promise.all(evaluated.searchValues.map((value) => keys.blindIndex(value))),
  ]);
  const metadataPairs = Object.entries(definition.metadata).map(
    ([key, value]) => [key.toLowerCase(), value.toLowerCase()] as [string, string],
  );
  return {
    row: {
      ...stamp,
      type: definition.type,
      ciphertext,
      fingerprint: fingerprints[0]!,
      fingerprintExpression: definition.fingerprintExpression,
      mask: maskColumnOf(definition.mask),
      searchIndexes: JSON.stringify(definition.searchIndexes),
      metadata: JSON.stringify(definition.metadata),
      containers: JSON.stringify(definition.containers),
      expiresAt: definition.expiresAt,
      keyVersion: keys.current.version,
    },
    metadata: [...new Map(metadataPairs.map((pair) => [JSON.stringify(pair), pair])).values()],
    blindIndexes: [...new Set(blindIndexes)],
    fingerprints,
  };
}

/** The token's data; a card's cvc is left out once its retention window has passed, cron or not. */
export async function decryptData(keys: TenantKeys, row: Pick<TokenRow, "id" | "ciphertext" | "cvcExpiresAt">): Promise<unknown> {
  const data = JSON.parse(await keys.decrypt(row.ciphertext, row.id)) as unknown;
  return row.cvcExpiresAt !== null && row.cvcExpiresAt <= Date.now() ? withoutCvc(data) : data;
}
