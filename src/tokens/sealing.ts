import type { TenantKeys } from "../crypto/tenant-keys";
import { withoutCvc } from "./cvc";
import { type Evaluated, evaluate, type TokenDefinition } from "./definition";
import { WorkBudget } from "./expressions";
import { maskColumnOf, maskOf } from "./mask-templates";
import { containersOf, metadataOf, searchIndexesOf } from "./presentation";
import type { TokenRow } from "./storage";
import type { SealedToken } from "./storage-writes";

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
      previousFingerprint: null,
    },
    metadata: [...new Map(metadataPairs.map((pair) => [JSON.stringify(pair), pair])).values()],
    blindIndexes: [...new Set(blindIndexes)],
    fingerprints,
  };
}

/**
 * The stored token sealed again under the keys' current version, for a data-key rotation: the same
 * data, members and stamp, with its fingerprint and blind indexes recomputed from the data. The
 * fingerprint it had is kept as `previousFingerprint`.
 */
export async function resealToken(keys: TenantKeys, row: TokenRow): Promise<SealedToken> {
  const definition: TokenDefinition = {
    type: row.type as TokenDefinition["type"],
    // The stored data as it is (a cvc past its window included: the cron removes it on its own terms).
    data: JSON.parse(await keys.decrypt(row.ciphertext, row.id)) as unknown,
    metadata: metadataOf(row),
    containers: containersOf(row),
    searchIndexes: searchIndexesOf(row),
    fingerprintExpression: row.fingerprintExpression,
    mask: maskOf(row.mask),
    expiresAt: row.expiresAt,
  };
  // These expressions rendered when the token was written, so nothing is reported here.
  const evaluated = evaluate(definition, () => {}, WorkBudget.of(definition.data));
  const { id, tenantId, createdBy, createdAt, modifiedBy, modifiedAt, cvcExpiresAt } = row;
  return keepPreviousFingerprint(
    await sealToken(keys, definition, evaluated, { id, tenantId, createdBy, createdAt, modifiedBy, modifiedAt, cvcExpiresAt }),
    row,
  );
}

/**
 * A token sealed again (re-sealed, or updated) keeps answering to the fingerprint it had while its
 * fingerprinted value is the same: under the same version the fingerprint is unchanged and the one
 * before it stays; under a newer version the stored one becomes the previous. A changed value drops it.
 */
export function keepPreviousFingerprint(sealed: SealedToken, stored: Pick<TokenRow, "fingerprint" | "previousFingerprint">): SealedToken {
  if (sealed.row.fingerprint === stored.fingerprint) sealed.row.previousFingerprint = stored.previousFingerprint;
  else if (sealed.fingerprints.includes(stored.fingerprint)) sealed.row.previousFingerprint = stored.fingerprint;
  return sealed;
}

/** The token's data; a card's cvc is left out once its retention window has passed, cron or not. */
export async function decryptData(keys: TenantKeys, row: Pick<TokenRow, "id" | "ciphertext" | "cvcExpiresAt">): Promise<unknown> {
  const data = JSON.parse(await keys.decrypt(row.ciphertext, row.id)) as unknown;
  return row.cvcExpiresAt !== null && row.cvcExpiresAt <= Date.now() ? withoutCvc(data) : data;
}
