/**
 * Apple Pay tokens: the device card a decrypted EC_v1 payment token carried, kept sealed under the
 * tenant's data key until its `expires_at`, with its online payment cryptogram and ECI sealed apart
 * and kept only CARD_CVC_RETENTION_S, like a card's cvc (docs/decisions.md, "Apple Pay").
 */
import { detectBrand } from "../../elements/frame/cards";
import { holdsPermission, isBrowserKey, type Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import type { TenantKeys } from "../crypto/tenant-keys";
import { NotFoundError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { binLength } from "../tokens/card-filters";
import { endOfExpiryMonth, type WalletResource, walletExpressions } from "../tokens/wallet-resources";
import type { ApplePayTokenResponse } from "./schema";
import * as storage from "./token-storage";

/** The additional data of a token's sealed card, and of its sealed cryptogram: neither opens as the other, nor in another row. */
export const cardContext = (id: string) => `apple-pay/${id}/card`;
export const authenticationContext = (id: string) => `apple-pay/${id}/authentication`;

/** Expired tokens one purge statement deletes, and how many statements a cron run makes. */
const PURGE_CHUNK = 500;
const PURGE_CHUNKS_PER_RUN = 20;

const GONE = "an Apple Pay token is gone once deleted or past its expires_at";

interface Card {
  number: string;
  expiration_month: number;
  expiration_year: number;
}

interface Authentication {
  threeds_cryptogram: string;
  eci_indicator?: string;
}

/** What a decrypted payment token is kept as. */
export interface DecryptedCard {
  card: Card;
  authentication: Authentication | null;
  transactionId: string;
  paymentDataType?: string;
  deviceManufacturerIdentifier?: string;
}

/**
 * Keeps the card as an Apple Pay token of the caller's tenant, until `expiresAt` or else the end of
 * the card's expiration month; a card already expired then is a 400 and nothing is stored.
 */
export async function storeApplePayToken(
  context: TenantContext,
  principal: Principal,
  decrypted: DecryptedCard,
  expiresAt: string | undefined,
): Promise<ApplePayTokenResponse> {
  const now = Date.now();
  const expires = expiresAt === undefined ? endOfExpiryMonth(decrypted.card) : Date.parse(expiresAt);
  if (expires <= now) {
    throw ValidationError.field(
      "apple_payment_data.paymentData",
      "carries a device card whose expiration month has passed; send expires_at to keep it regardless",
    );
  }
  const keys = await context.keys();
  const id = crypto.randomUUID();
  const row: storage.ApplePayTokenRow = {
    id,
    tenantId: context.tenantId,
    type: "dpan",
    dataCiphertext: await keys.encrypt(JSON.stringify(decrypted.card), cardContext(id)),
    authenticationCiphertext: decrypted.authentication
      ? await keys.encrypt(JSON.stringify(decrypted.authentication), authenticationContext(id))
      : null,
    authenticationExpiresAt: decrypted.authentication ? now + context.config.CARD_CVC_RETENTION_S * 1000 : null,
    transactionId: decrypted.transactionId,
    paymentDataType: decrypted.paymentDataType ?? null,
    deviceManufacturerIdentifier: decrypted.deviceManufacturerIdentifier ?? null,
    createdBy: principal.applicationId,
    createdAt: now,
    expiresAt: expires,
  };
  await storage.insertToken(context.control, row);
  context.audit.describe({ entityId: id });
  return presentToken(principal, row, keys, { withData: false });
}

export async function getApplePayToken(context: TenantContext, principal: Principal, id: string): Promise<ApplePayTokenResponse> {
  const row = await storage.findLiveToken(context.control, context.tenantId, id, Date.now());
  if (!row) throw new NotFoundError(`Apple Pay token ${id}`, GONE);
  return presentToken(principal, row, await context.keys(), { withData: true });
}

export async function deleteApplePayToken(context: TenantContext, id: string): Promise<void> {
  if (!(await storage.deleteToken(context.control, context.tenantId, id, Date.now()))) {
    throw new NotFoundError(`Apple Pay token ${id}`, GONE);
  }
}

/**
 * Apple Pay tokens as `{{ apple_pay: <id> | … }}` reads them (src/tokens/wallet-resources.ts): as GET
 * /apple-pay/{id} shows each to the principal, which needs apple-pay:read.
 */
const applePayTokens: WalletResource<storage.ApplePayTokenRow, ApplePayTokenResponse> = {
  what: "Apple Pay token",
  entityType: "apple-pay",
  referencePrefix: "apple_pay|",
  read: ["apple-pay:read"],
  reveal: "apple-pay:reveal",
  liveRows: (context, ids, now) => storage.findLiveTokens(context.control, context.tenantId, ids, now),
  present: (principal, row, keys) => presentToken(principal, row, keys, { withData: true }),
};
export const {
  reference: applePayReference,
  isReference: isApplePayReference,
  use: useApplePayTokens,
  shownLessNow: applePayShownLessNow,
} = walletExpressions(applePayTokens);

/** All but the last four digits masked: a mask never shows a whole value. */
const maskedNumber = (number: string) => "X".repeat(number.length - 4) + number.slice(-4);

/**
 * The token as the caller may see it. A key in a browser (public, or a session's) sees only what
 * identifies the token. Otherwise the card's facts (the BIN under apple-pay:reveal only: with the
 * last four it leaves few guesses), and on a read the card, masked unless the key holds
 * apple-pay:reveal, which alone also shows the cryptogram, until its retention ends.
 */
async function presentToken(
  principal: Principal,
  row: storage.ApplePayTokenRow,
  keys: TenantKeys,
  { withData }: { withData: boolean },
): Promise<ApplePayTokenResponse> {
  const shown: ApplePayTokenResponse = {
    id: row.id,
    type: "dpan",
    tenant_id: row.tenantId,
    status: "active",
    expires_at: isoTime(row.expiresAt)!,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
    transaction_id: row.transactionId,
    ...(row.paymentDataType ? { payment_data_type: row.paymentDataType } : {}),
    ...(row.deviceManufacturerIdentifier ? { device_manufacturer_identifier: row.deviceManufacturerIdentifier } : {}),
  };
  if (isBrowserKey(principal)) return shown;
  const reveal = holdsPermission(principal, "apple-pay:reveal");
  const card = JSON.parse(await keys.decrypt(row.dataCiphertext, cardContext(row.id))) as Card;
  const brand = detectBrand(card.number).rules?.brand;
  shown.card = {
    ...(reveal ? { bin: card.number.slice(0, binLength(card.number.length)) } : {}),
    last4: card.number.slice(-4),
    expiration_month: card.expiration_month,
    expiration_year: card.expiration_year,
    ...(brand ? { brand } : {}),
  };
  if (!withData) return shown;
  shown.data = { ...card, number: reveal ? card.number : maskedNumber(card.number) };
  const authenticationKept =
    row.authenticationCiphertext !== null && row.authenticationExpiresAt !== null && row.authenticationExpiresAt > Date.now();
  if (reveal && authenticationKept) {
    shown.authentication = JSON.parse(await keys.decrypt(row.authenticationCiphertext!, authenticationContext(row.id))) as Authentication;
  }
  return shown;
}

/**
 * Called by the scheduled handler: expired tokens go, a bounded number per run, and cryptograms
 * past their retention are cleared from the rows that keep them (reads leave them out before then).
 */
export async function purgeExpiredApplePayTokens(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
    const deleted = await storage.purgeExpiredTokens(context.control, now, PURGE_CHUNK);
    for (const { tenantId, id } of deleted) {
      context.audit.record({
        tenantId,
        entityType: "apple-pay",
        entityId: id,
        operation: "delete",
        message: "Deleted expired Apple Pay token",
      });
    }
    purged += deleted.length;
    if (deleted.length < PURGE_CHUNK) break;
  }
  for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
    if ((await storage.clearExpiredAuthentications(context.control, now, PURGE_CHUNK)) < PURGE_CHUNK) break;
  }
  return purged;
}
