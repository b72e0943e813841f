/**
 * Using a wallet's resources (Apple Pay tokens, Google Pay resources) in detokenization expressions
 * (`{{ apple_pay: <id> | … }}`, `{{ google_pay: <id> | … }}`), and checking them again when an
 * idempotent answer is replayed: one implementation, read through the description each wallet gives
 * (walletExpressions), whose functions src/detokenization/service.ts calls.
 */
import { holdsPermission, isBrowserKey, type Principal } from "../auth/access";
import type { Permission } from "../auth/permissions";
import type { TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { ForbiddenError, type ShownToken, ValidationError } from "../errors";

/**
 * When a wallet's device card is kept until, without an `expires_at` of the caller's: the first
 * instant after the card's expiration month, UTC. A card past it is nothing to keep.
 */
export const endOfExpiryMonth = (card: { expiration_month: number; expiration_year: number }): number =>
  Date.UTC(card.expiration_year, card.expiration_month, 1);

/** What the use reads of a stored row: its id and its cryptogram's deadline. */
interface WalletRow {
  id: string;
  authenticationExpiresAt: number | null;
}

/** What the use reads of a resource as its GET shows it: the card and the cryptogram, when shown. */
interface WalletShown {
  data?: unknown;
  authentication?: unknown;
}

/** A wallet's resource as an expression reads it. Its two functions are methods, so a wallet's own row types fit the defaults. */
export interface WalletResource<Row extends WalletRow = WalletRow, Shown extends WalletShown = WalletShown> {
  /** How messages name one: `Apple Pay token`. */
  what: string;
  entityType: Parameters<TenantContext["audit"]["record"]>[0]["entityType"];
  /**
   * How a request's record of what it detokenized (src/errors.ts, RevealedValues.tokens) names one,
   * before its id: `|` is in no token id, so it never passes for a token of a chosen id.
   */
  referencePrefix: `${string}|`;
  /** Any of these lets a key read one; without, using one is a 403 naming them. */
  read: readonly Permission[];
  /** Shows the card whole, and the cryptogram while kept; otherwise the card is masked. */
  reveal: Permission;
  /** The tenant's rows among `ids` that have not expired, in one statement. */
  liveRows(context: TenantContext, ids: string[], now: number): Promise<Row[]>;
  /** The row as its GET shows it to the principal. */
  present(principal: Principal, row: Row, keys: TenantKeys, now: number): Promise<Shown>;
}

const walletReference = (resource: WalletResource, id: string) => `${resource.referencePrefix}${id}`;

const mayRead = (resource: WalletResource, principal: Principal) =>
  resource.read.some((permission) => holdsPermission(principal, permission));

/**
 * The resources by id, each as its GET shows it to the principal, who needs one of its read
 * permissions (a 403 without). An unknown, expired or another tenant's id is a 400, as an unknown
 * token is, and so is every id to a key that lives in a browser.
 */
async function useWalletResources(
  resource: WalletResource,
  context: TenantContext,
  principal: Principal,
  ids: string[],
): Promise<Map<string, unknown>> {
  const now = Date.now();
  const rows = new Map((await resource.liveRows(context, [...new Set(ids)], now)).map((row) => [row.id, row]));
  const keys = await context.keys();
  const used = new Map<string, unknown>();
  for (const id of ids) {
    const row = rows.get(id);
    if (!row || isBrowserKey(principal)) throw new ValidationError(`${resource.what} ${id} does not exist or has expired`);
    if (!mayRead(resource, principal)) throw new ForbiddenError(`Using ${resource.what} ${id} needs ${resource.read.join(" or ")}`);
    const shown = await resource.present(principal, row, keys, now);
    context.audit.record({
      entityType: resource.entityType,
      entityId: id,
      operation: "use",
      message: `Used ${resource.what} (detokenized)`,
    });
    context.revealed.add(shown.data);
    context.revealed.add(shown.authentication);
    context.revealed.tokens.set(walletReference(resource, id), {
      transform: holdsPermission(principal, resource.reveal) ? "reveal" : "mask",
      cvcExpiresAt: shown.authentication ? row.authenticationExpiresAt : null,
    });
    used.set(id, shown);
  }
  return used;
}

/**
 * Why a fresh detokenization by the principal would now refuse a resource an earlier one showed
 * (`shown`, by id), or show less of it; null when it would show each as before.
 */
async function walletShownLessNow(
  resource: WalletResource,
  context: TenantContext,
  principal: Principal,
  shown: Map<string, ShownToken["transform"]>,
): Promise<string | null> {
  if (shown.size === 0) return null;
  const live = new Set((await resource.liveRows(context, [...shown.keys()], Date.now())).map((row) => row.id));
  for (const [id, transform] of shown) {
    if (!live.has(id)) return `${resource.what} ${id} does not exist or has expired`;
    if (!mayRead(resource, principal)) return `Using ${resource.what} ${id} needs ${resource.read.join(" or ")}`;
    if (transform === "reveal" && !holdsPermission(principal, resource.reveal)) return `${resource.what} ${id} is now shown masked`;
  }
  return null;
}

/**
 * What detokenization reads a wallet through: how a request's record names one of its resources,
 * whether a record's name is one, the resources' use in expressions, and the replay check.
 */
export function walletExpressions(resource: WalletResource) {
  return {
    reference: (id: string) => walletReference(resource, id),
    isReference: (reference: string) => reference.startsWith(resource.referencePrefix),
    use: (context: TenantContext, principal: Principal, ids: string[]) => useWalletResources(resource, context, principal, ids),
    shownLessNow: (context: TenantContext, principal: Principal, shown: Map<string, ShownToken["transform"]>) =>
      walletShownLessNow(resource, context, principal, shown),
  };
}
