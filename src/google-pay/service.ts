/**
 * Google Pay: a tenant registers its Google merchant id and the ECv2 private keys Google encrypts
 * its tokens to (kept sealed, never answered); POST /google-pay verifies and decrypts a token
 * (ecv2.ts) and turns a PAN_ONLY card into a token intent, a CRYPTOGRAM_3DS device card into a
 * google-pay resource (GET|DELETE /google-pay/{id}).
 */
import { z } from "@hono/zod-openapi";
import { detectBrand } from "../../elements/frame/cards";
import { holdsPermission, isBrowserKey, type Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { fromBase64, fromBase64Url, toBase64, toHex } from "../crypto/encoding";
import type { TenantKeys } from "../crypto/tenant-keys";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { GOOGLE_PAY } from "../limits";
import { CreateTokenIntentBody } from "../token-intents/schema";
import { createTokenIntent } from "../token-intents/service";
import { binLength } from "../tokens/card-filters";
import { endOfExpiryMonth, type WalletResource, walletExpressions } from "../tokens/wallet-resources";
import { EcV2Refusal, type EcV2RefusalCode, type EcV2Token, messageOf, unsealEcV2 } from "./ecv2";
import type {
  CreateGooglePayInput,
  GooglePayCreateResponse,
  GooglePayResource,
  MerchantKeyInput,
  MerchantKeyResponse,
  MerchantRegistrationInput,
  MerchantRegistrationResponse,
} from "./schema";
import * as storage from "./storage";

/** Additional data of a merchant private key's ciphertext: a ciphertext moved to another row fails to decrypt. */
export const merchantKeyContext = (id: string) => `google-pay/merchant-keys/${id}/private-key`;

const ECDH_P256 = { name: "ECDH", namedCurve: "P-256" } as const;

function toMerchantResponse(row: storage.MerchantRow): MerchantRegistrationResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    merchant_identifier: row.merchantIdentifier,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
  };
}

function toMerchantKeyResponse(row: storage.MerchantKeyRow): MerchantKeyResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    merchant_certificate_fingerprint: row.fingerprint,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
  };
}

export async function registerMerchant(
  context: TenantContext,
  principal: Principal,
  input: MerchantRegistrationInput,
): Promise<MerchantRegistrationResponse> {
  const row: storage.MerchantRow = {
    id: crypto.randomUUID(),
    tenantId: principal.tenantId,
    merchantIdentifier: input.merchant_identifier,
    createdBy: principal.applicationId,
    createdAt: Date.now(),
  };
  if (!(await storage.insertMerchant(context.control, row, GOOGLE_PAY.maxMerchantsPerTenant))) {
    throw new ConflictError(
      `A tenant holds at most ${GOOGLE_PAY.maxMerchantsPerTenant} Google Pay merchant registrations; delete one first`,
    );
  }
  context.audit.describe({ entityId: row.id });
  return toMerchantResponse(row);
}

async function merchantOf(context: TenantContext, id: string): Promise<storage.MerchantRow> {
  const row = await storage.findMerchant(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Google Pay merchant registration ${id}`);
  return row;
}

export async function getMerchant(context: TenantContext, id: string): Promise<MerchantRegistrationResponse> {
  return toMerchantResponse(await merchantOf(context, id));
}

/** Deleting a registration destroys its private keys: tokens encrypted to them can no longer be opened. */
export async function deleteMerchant(context: TenantContext, id: string): Promise<void> {
  if (!(await storage.deleteMerchant(context.control, context.tenantId, id)))
    throw new NotFoundError(`Google Pay merchant registration ${id}`);
}

/** The DER bytes of a PKCS #8 key sent as base64 or as PEM. */
function pkcs8Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  const body = text
    .trim()
    .replace(/^-----BEGIN PRIVATE KEY-----/, "")
    .replace(/-----END PRIVATE KEY-----$/, "")
    .replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
  try {
    return fromBase64(body) as Uint8Array<ArrayBuffer>;
  } catch {
    return null;
  }
}

const NOT_A_KEY = "must be an EC P-256 private key as unencrypted PKCS #8, base64 or PEM";

/** The key's fingerprint: SHA-256 of its public point (0x04 || x || y), hex. */
async function fingerprintOf(key: CryptoKey): Promise<string> {
  const jwk = (await crypto.subtle.exportKey("jwk", key)) as JsonWebKey;
  const x = fromBase64Url(jwk.x!);
  const y = fromBase64Url(jwk.y!);
  const point = new Uint8Array(1 + x.length + y.length);
  point[0] = 4;
  point.set(x, 1);
  point.set(y, 1 + x.length);
  return toHex(await crypto.subtle.digest("SHA-256", point));
}

/**
 * Adds an ECv2 private key to the merchant: checked to be a P-256 key, stored sealed under the tenant's
 * data key; the answer shows only its public key's fingerprint.
 */
export async function addMerchantKey(
  context: TenantContext,
  principal: Principal,
  merchantId: string,
  input: MerchantKeyInput,
): Promise<MerchantKeyResponse> {
  await merchantOf(context, merchantId);
  const der = pkcs8Bytes(input.merchant_certificate_data);
  let key: CryptoKey | null = null;
  if (der) key = await crypto.subtle.importKey("pkcs8", der, ECDH_P256, true, ["deriveBits"]).catch(() => null);
  if (!der || !key) throw ValidationError.field("merchant_certificate_data", NOT_A_KEY);
  const id = crypto.randomUUID();
  const row: storage.MerchantKeyRow = {
    id,
    tenantId: principal.tenantId,
    merchantId,
    privateKeyCiphertext: await (await context.keys()).encrypt(toBase64(der), merchantKeyContext(id)),
    fingerprint: await fingerprintOf(key),
    createdBy: principal.applicationId,
    createdAt: Date.now(),
  };
  if (!(await storage.insertMerchantKey(context.control, row, GOOGLE_PAY.maxKeysPerMerchant))) {
    await merchantOf(context, merchantId);
    throw new ConflictError(`A Google Pay merchant registration holds at most ${GOOGLE_PAY.maxKeysPerMerchant} keys; delete one first`);
  }
  context.audit.describe({ entityId: id });
  return toMerchantKeyResponse(row);
}

export async function getMerchantKey(context: TenantContext, merchantId: string, id: string): Promise<MerchantKeyResponse> {
  const row = await storage.findMerchantKey(context.control, context.tenantId, merchantId, id);
  if (!row) throw new NotFoundError(`Google Pay merchant key ${id}`);
  return toMerchantKeyResponse(row);
}

export async function deleteMerchantKey(context: TenantContext, merchantId: string, id: string): Promise<void> {
  if (!(await storage.deleteMerchantKey(context.control, context.tenantId, merchantId, id))) {
    throw new NotFoundError(`Google Pay merchant key ${id}`);
  }
}

/** A refusal of POST /google-pay: 400, its stable code (docs/api.md) as the `google_payment_data` error. */
function refusal(
  code: EcV2RefusalCode | "unsupported_payment_method" | "unsupported_auth_method" | "invalid_card" | "invalid_cryptogram",
  message: string,
): ValidationError {
  return new ValidationError(`google_payment_data: ${message} (${code})`, { google_payment_data: [code] });
}

/** The registration whose keys open the token: the one named, or the tenant's only one. */
async function recipientMerchant(context: TenantContext, id: string | undefined): Promise<storage.MerchantRow> {
  if (id !== undefined) {
    const row = await storage.findMerchant(context.control, context.tenantId, id);
    if (!row) throw ValidationError.field("merchant_registration_id", "names no Google Pay merchant registration of this tenant");
    return row;
  }
  const rows = await storage.merchantsOf(context.control, context.tenantId, 2);
  if (rows.length === 0)
    throw ValidationError.field("google_payment_data", "the tenant has no Google Pay merchant registration to decrypt it");
  if (rows.length > 1)
    throw ValidationError.field("merchant_registration_id", "is required: the tenant has several Google Pay merchant registrations");
  return rows[0]!;
}

async function privateKeysOf(context: TenantContext, merchant: storage.MerchantRow): Promise<CryptoKey[]> {
  const rows = await storage.merchantKeysOf(context.control, context.tenantId, merchant.id);
  if (rows.length === 0) throw ValidationError.field("google_payment_data", "the merchant registration holds no private key to decrypt it");
  const keys = await context.keys();
  return Promise.all(
    rows.map(async (row) => {
      const pkcs8 = await keys.decrypt(row.privateKeyCiphertext, merchantKeyContext(row.id));
      return crypto.subtle.importKey("pkcs8", fromBase64(pkcs8), ECDH_P256, false, ["deriveBits"]);
    }),
  );
}

/** The card of a decrypted message (PAN_ONLY or CRYPTOGRAM_3DS), as a `card` token's data. */
function cardOf(details: Record<string, unknown>): Record<string, unknown> {
  return { number: details.pan, expiration_month: details.expirationMonth, expiration_year: details.expirationYear };
}

/**
 * Verifies and decrypts the token for the merchant, then stores its card: a PAN_ONLY card as a token
 * intent, a CRYPTOGRAM_3DS device card as a google-pay resource. Nothing is stored unless every check passed.
 */
export async function createFromGooglePay(
  context: TenantContext,
  principal: Principal,
  input: CreateGooglePayInput,
): Promise<GooglePayCreateResponse> {
  const now = Date.now();
  const expiresAt = input.expires_at === undefined ? null : Date.parse(input.expires_at);
  if (expiresAt !== null && expiresAt <= now) throw ValidationError.field("expires_at", "must be in the future");
  const merchant = await recipientMerchant(context, input.merchant_registration_id);
  const privateKeys = await privateKeysOf(context, merchant);
  let message: Record<string, unknown>;
  try {
    const plaintext = await unsealEcV2(input.google_payment_data as EcV2Token, {
      recipientId: `merchant:${merchant.merchantIdentifier}`,
      privateKeys,
      rootKeys: context.config.GOOGLE_PAY_ROOT_SIGNING_KEYS,
      now,
    });
    message = messageOf(plaintext, now);
  } catch (error) {
    if (error instanceof EcV2Refusal) throw refusal(error.code, error.message);
    throw error;
  }
  const details = message.paymentMethodDetails as Record<string, unknown> | undefined;
  if (message.paymentMethod !== "CARD" || typeof details !== "object" || details === null) {
    throw refusal("unsupported_payment_method", "the decrypted message is not a CARD payment");
  }
  if (details.authMethod !== "PAN_ONLY" && details.authMethod !== "CRYPTOGRAM_3DS") {
    throw refusal("unsupported_auth_method", "the decrypted card's authMethod is neither PAN_ONLY nor CRYPTOGRAM_3DS");
  }
  // The card follows a card token's rules, as POST /token-intents checks them (its messages never show the values).
  const card = CreateTokenIntentBody.safeParse({ type: "card", data: cardOf(details) });
  if (!card.success) throw refusal("invalid_card", "the decrypted card is not a valid card");
  if (details.authMethod === "PAN_ONLY") return { token_intent: await createTokenIntent(context, principal, card.data) };
  const authentication = PaymentAuthentication.safeParse(details);
  if (!authentication.success) throw refusal("invalid_cryptogram", "the decrypted CRYPTOGRAM_3DS card carries no valid cryptogram");
  // A device card is kept no longer than it can be charged, unless the caller says otherwise (as Apple Pay's).
  const storedCard = card.data.data as StoredCard;
  const keptUntil = expiresAt ?? endOfExpiryMonth(storedCard);
  if (keptUntil <= now) {
    throw refusal("invalid_card", "the decrypted device card's expiration month has passed; send expires_at to keep it regardless");
  }
  const resource = await storeResource(context, principal, {
    card: storedCard,
    authentication: { threeds_cryptogram: authentication.data.cryptogram, eci_indicator: authentication.data.eciIndicator ?? "" },
    details: detailsOf(message, details, authentication.data.eciIndicator ?? ""),
    expiresAt: keptUntil,
    now,
  });
  return { google_pay: resource };
}

/** A CRYPTOGRAM_3DS card's cryptogram (base64, as Google sends it) and optional ECI. */
const PaymentAuthentication = z.object({
  cryptogram: z
    .string()
    .min(1)
    .max(GOOGLE_PAY.maxCryptogramChars)
    .regex(/^[A-Za-z0-9+/=_-]+$/),
  eciIndicator: z
    .string()
    .regex(/^[0-9]{1,2}$/)
    .optional(),
});

const AssuranceDetails = z.object({ accountVerified: z.boolean(), cardHolderAuthenticated: z.boolean() });

interface StoredCard {
  number: string;
  expiration_month: number;
  expiration_year: number;
}
type StoredAuthentication = NonNullable<GooglePayResource["authentication"]>;
type StoredDetails = NonNullable<GooglePayResource["details"]>;

/** The payment's details Google states, in the clear: no card data. A message id beyond its bound is left out. */
function detailsOf(message: Record<string, unknown>, details: Record<string, unknown>, eciIndicator: string): StoredDetails {
  const assurance = AssuranceDetails.safeParse(details.assuranceDetails);
  const messageId =
    typeof message.messageId === "string" && message.messageId.length <= GOOGLE_PAY.maxMessageIdChars ? message.messageId : "";
  return {
    tsp: "Google",
    auth_method: "CRYPTOGRAM_3DS",
    message_id: messageId,
    eci_indicator: eciIndicator,
    ...(assurance.success
      ? {
          assurance_details: {
            account_verified: assurance.data.accountVerified,
            card_holder_authenticated: assurance.data.cardHolderAuthenticated,
          },
        }
      : {}),
  };
}

/** Additional data of a resource's two ciphertexts: moved to another row or column, either fails to decrypt. */
export const resourceCardContext = (id: string) => `google-pay/${id}/card`;
export const resourceAuthenticationContext = (id: string) => `google-pay/${id}/authentication`;

/**
 * Seals the device card and, apart, its cryptogram (kept CARD_CVC_RETENTION_S, as a card's security
 * code: docs/decisions.md, "Google Pay CRYPTOGRAM_3DS"), and answers as the creator may see it.
 */
async function storeResource(
  context: TenantContext,
  principal: Principal,
  input: { card: StoredCard; authentication: StoredAuthentication; details: StoredDetails; expiresAt: number | null; now: number },
): Promise<GooglePayResource> {
  const keys = await context.keys();
  const id = crypto.randomUUID();
  const row: storage.ResourceRow = {
    id,
    tenantId: principal.tenantId,
    ciphertext: await keys.encrypt(JSON.stringify(input.card), resourceCardContext(id)),
    authenticationCiphertext: await keys.encrypt(JSON.stringify(input.authentication), resourceAuthenticationContext(id)),
    authenticationExpiresAt: input.now + context.config.CARD_CVC_RETENTION_S * 1000,
    details: JSON.stringify(input.details),
    createdBy: principal.applicationId,
    createdAt: input.now,
    expiresAt: input.expiresAt,
  };
  await storage.insertResource(context.control, row);
  context.audit.describe({ entityType: "google-pay", entityId: id, message: "CRYPTOGRAM_3DS card stored as a Google Pay resource" });
  if (isBrowserKey(principal)) return identityOf(row);
  return { ...identityOf(row), card: cardFacts(input.card, false), details: input.details };
}

function identityOf(row: storage.ResourceRow): GooglePayResource {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    status: "active",
    expires_at: isoTime(row.expiresAt),
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
  };
}

/** The card's facts: the BIN only under reveal (with the last four it narrows the number to a few thousand). */
function cardFacts(card: StoredCard, reveal: boolean): NonNullable<GooglePayResource["card"]> {
  const brand = detectBrand(card.number).rules?.brand;
  return {
    ...(reveal ? { bin: card.number.slice(0, binLength(card.number.length)) } : {}),
    last4: card.number.slice(-4),
    expiration_month: card.expiration_month,
    expiration_year: card.expiration_year,
    ...(brand ? { brand } : {}),
  };
}

/**
 * GET /google-pay/{id}: under `google-pay:reveal` the card whole and, until its retention ends, the
 * cryptogram; under `google-pay:read` only the card's number masked to its last four.
 */
export async function getGooglePay(context: TenantContext, principal: Principal, id: string): Promise<GooglePayResource> {
  const now = Date.now();
  const row = await storage.findLiveResource(context.control, context.tenantId, id, now);
  if (!row) throw new NotFoundError(`Google Pay resource ${id}`);
  return presentResource(principal, row, await context.keys(), now);
}

async function presentResource(principal: Principal, row: storage.ResourceRow, keys: TenantKeys, now: number): Promise<GooglePayResource> {
  const reveal = holdsPermission(principal, "google-pay:reveal");
  const card = JSON.parse(await keys.decrypt(row.ciphertext, resourceCardContext(row.id))) as StoredCard;
  const authenticationLive = row.authenticationCiphertext !== null && (row.authenticationExpiresAt ?? 0) > now;
  const authentication =
    reveal && authenticationLive
      ? (JSON.parse(await keys.decrypt(row.authenticationCiphertext!, resourceAuthenticationContext(row.id))) as StoredAuthentication)
      : undefined;
  return {
    ...identityOf(row),
    card: cardFacts(card, reveal),
    data: reveal ? card : { ...card, number: "X".repeat(card.number.length - 4) + card.number.slice(-4) },
    ...(authentication ? { authentication } : {}),
    details: JSON.parse(row.details) as StoredDetails,
  };
}

/**
 * Google Pay resources as `{{ google_pay: <id> | … }}` reads them (src/tokens/wallet-resources.ts): as GET
 * /google-pay/{id} shows each to the principal, which needs google-pay:read or google-pay:reveal.
 */
const googlePayResources: WalletResource<storage.ResourceRow, GooglePayResource> = {
  what: "Google Pay resource",
  entityType: "google-pay",
  referencePrefix: "google_pay|",
  read: ["google-pay:read", "google-pay:reveal"],
  reveal: "google-pay:reveal",
  liveRows: (context, ids, now) => storage.findLiveResources(context.control, context.tenantId, ids, now),
  present: presentResource,
};
export const {
  reference: googlePayReference,
  isReference: isGooglePayReference,
  use: useGooglePayResources,
  shownLessNow: googlePayShownLessNow,
} = walletExpressions(googlePayResources);

/** DELETE /google-pay/{id}: the deleted resource's id (its sealed card and cryptogram go with the row). */
export async function deleteGooglePay(context: TenantContext, id: string): Promise<string> {
  const row = await storage.deleteResource(context.control, context.tenantId, id, Date.now());
  if (!row) throw new NotFoundError(`Google Pay resource ${id}`);
  return row.id;
}

/** Resources one purge statement reaches, and how many statements a cron run makes of each kind. */
const PURGE_CHUNK = 500;
const PURGE_CHUNKS_PER_RUN = 20;

/**
 * Called by the scheduled handler: drops the cryptograms whose retention has ended (reads stopped
 * showing them at the deadline already) and deletes expired resources, a bounded number per run.
 */
export async function purgeExpiredGooglePay(context: RequestContext, now = Date.now()): Promise<void> {
  const d1 = context.control.$client;
  for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
    if ((await storage.clearExpiredAuthentications(d1, now, PURGE_CHUNK)) < PURGE_CHUNK) break;
  }
  for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
    const deleted = await storage.purgeExpiredResources(d1, now, PURGE_CHUNK);
    for (const { tenantId, id } of deleted) {
      context.audit.record({
        tenantId,
        entityType: "google-pay",
        entityId: id,
        operation: "delete",
        message: "Deleted expired Google Pay resource",
      });
    }
    if (deleted.length < PURGE_CHUNK) break;
  }
}
