/**
 * `deduplicate_token`: a create or update whose type and fingerprint match a live token in the
 * caller's reach is answered with that token instead of writing a new one. The database makes it
 * atomic (insertTokens): of concurrent deduplicating creates of one value, one inserts.
 */
import { accessTo, isBrowserKey, type Principal } from "../auth/access";
import type { TokenPermission } from "../auth/permissions";
import type { Database } from "../db/client";
import { ConflictError } from "../errors";
import { containersOf } from "./presentation";
import type { TokenRow } from "./storage";
import * as storage from "./storage";
import { type SealedToken, writtenTokenIds } from "./storage-writes";

/** What a create request ends in: a new token to insert, or an existing token it duplicates. */
export interface Outcome {
  row: TokenRow;
  /** Present when the token is new and must be written. */
  inserted?: SealedToken;
  /** The plaintext when this request supplied it; absent for an existing token, which is decrypted. */
  data?: () => unknown;
}

/**
 * Why the caller may not deduplicate, or null when it may. An answer that says whether a value is
 * stored already is an oracle of it: a key that a browser holds could confirm guessed card numbers.
 * Any answer such a key could not tell from a fresh create's would ignore the option, so it is refused.
 */
export function deduplicationRefusal(principal: Pick<Principal, "applicationType">): string | null {
  return isBrowserKey(principal)
    ? "is not available to public and session keys: whether a value is stored already would tell guesses apart"
    : null;
}

/** What finds a token's duplicates: its type, and its fingerprint under every data-key version (its row's own first). */
export type Identity = Pick<SealedToken, "fingerprints"> & { row: Pick<TokenRow, "type" | "fingerprint"> };

/** Tokens are duplicates when type and fingerprint are equal. */
function identityOf(row: Pick<TokenRow, "type" | "fingerprint">): string {
  return `${row.type}\u0000${row.fingerprint}`;
}

/**
 * Reads a stored row's identity as the identity of the new token it duplicates: while a rotation
 * runs, a token written under the older key version has that version's fingerprint.
 */
function identityAs(tokens: Identity[]): (row: TokenRow) => string {
  const aliases = new Map<string, string>();
  for (const { row, fingerprints } of tokens) {
    for (const fingerprint of fingerprints) aliases.set(identityOf({ type: row.type, fingerprint }), identityOf(row));
  }
  return (row) => aliases.get(identityOf(row)) ?? identityOf(row);
}

/**
 * The oldest live token per type and fingerprint in a container where the principal holds the
 * permission (token:create for creates, token:update for updates), other than `excludedId`.
 */
async function existingDuplicates(
  db: Database,
  principal: Principal,
  permission: TokenPermission,
  of: Identity[],
  now: number,
  excludedId?: string,
): Promise<Map<string, TokenRow>> {
  const fingerprints = of.flatMap((token) => token.fingerprints);
  if (fingerprints.length === 0) return new Map();
  const rows = await storage.liveTokensByFingerprint(db, principal.tenantId, [...new Set(fingerprints)], now, excludedId);
  const identity = identityAs(of);
  const oldest = new Map<string, TokenRow>();
  for (const row of rows) {
    if (!oldest.has(identity(row)) && accessTo(principal, permission, containersOf(row), row.id) !== null) oldest.set(identity(row), row);
  }
  return oldest;
}

/**
 * A deduplicating request (`deduplicating[i]`) whose type and fingerprint match a live token the
 * principal may create in (the oldest such), or a token created earlier in the same call, gets
 * that token.
 */
export async function deduplicate(
  db: Database,
  principal: Principal,
  sealed: SealedToken[],
  deduplicating: boolean[],
  dataOf: (i: number) => unknown,
  now: number,
): Promise<Outcome[]> {
  const wanted = sealed.filter((_, i) => deduplicating[i]);
  const seen = new Map<string, Outcome>(
    [...(await existingDuplicates(db, principal, "token:create", wanted, now))].map(([identity, row]) => [identity, { row }]),
  );
  return sealed.map((token, i) => {
    const match = seen.get(identityOf(token.row));
    if (match && deduplicating[i]) return { row: match.row, data: match.data };
    const outcome: Outcome = { row: token.row, inserted: token, data: () => dataOf(i) };
    if (!match) seen.set(identityOf(token.row), outcome);
    return outcome;
  });
}

/**
 * Deduplicating creates that a concurrent create of the same value beat to the insert: each is
 * answered with the token that won, as if it had been there when the request began.
 */
export async function answerLostRaces(db: Database, principal: Principal, outcomes: Outcome[], now: number): Promise<void> {
  const attempted = outcomes.flatMap((outcome) => (outcome.inserted ? [outcome.inserted] : []));
  const written = await writtenTokenIds(db.$client, attempted);
  const lost = outcomes.filter((outcome) => outcome.inserted && !written.has(outcome.inserted.row.id));
  const winners = await existingDuplicates(
    db,
    principal,
    "token:create",
    lost.map(({ inserted }) => inserted!),
    now,
  );
  const lostRows = new Set(lost.map(({ row }) => row));
  // Requests of the same call that deduplicated onto a lost token follow it to the winner.
  for (const outcome of outcomes.filter(({ row }) => lostRows.has(row))) {
    const winner = winners.get(identityOf(outcome.row));
    if (!winner) throw new ConflictError("A duplicate of this token was created and removed meanwhile; retry the request");
    outcome.row = winner;
    outcome.inserted = undefined;
    outcome.data = undefined;
  }
}

/**
 * The token a deduplicating create got, found again by its identity: the oldest live duplicate the
 * principal may create in, which is what answerLostRaces answered if its own token lost the race.
 */
export async function duplicateOfCreate(db: Database, principal: Principal, of: Identity, now: number): Promise<TokenRow | undefined> {
  return (await existingDuplicates(db, principal, "token:create", [of], now)).get(identityOf(of.row));
}

/**
 * The oldest other live token of the same type and fingerprint in a container where the principal
 * may update tokens (as creation deduplicates only within the caller's reach).
 */
export async function duplicateOfUpdate(
  db: Database,
  principal: Principal,
  updated: SealedToken,
  now: number,
): Promise<TokenRow | undefined> {
  const found = await existingDuplicates(db, principal, "token:update", [updated], now, updated.row.id);
  return found.get(identityOf(updated.row));
}
