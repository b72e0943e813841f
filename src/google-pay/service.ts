/**
 * Google Pay: a tenant registers its Google merchant id and the ECv2 private keys Google encrypts
 * its tokens to (kept sealed, never answered); POST /google-pay verifies and decrypts a token
 * (ecv2.ts) and turns a PAN_ONLY card into a token intent.
 */
import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { fromBase64, fromBase64Url, toBase64, toHex } from "../crypto/encoding";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { GOOGLE_PAY } from "../limits";
import { CreateTokenIntentBody } from "../token-intents/schema";
import { createTokenIntent } from "../token-intents/service";
import { EcV2Refusal, type EcV2RefusalCode, type EcV2Token, messageOf, unsealEcV2 } from "./ecv2";
import type {
  CreateGooglePayInput,
  GooglePayCreateResponse,
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
  code: EcV2RefusalCode | "unsupported_payment_method" | "unsupported_auth_method" | "invalid_card",
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

/** The card of a decrypted PAN_ONLY message, as a `card` token's data. */
function cardOf(details: Record<string, unknown>): Record<string, unknown> {
  return { number: details.pan, expiration_month: details.expirationMonth, expiration_year: details.expirationYear };
}

/**
 * Verifies and decrypts the token for the merchant, then stores its card: a PAN_ONLY card as a token
 * intent. Nothing is stored unless every check passed.
 */
export async function createFromGooglePay(
  context: TenantContext,
  principal: Principal,
  input: CreateGooglePayInput,
): Promise<GooglePayCreateResponse> {
  const merchant = await recipientMerchant(context, input.merchant_registration_id);
  const privateKeys = await privateKeysOf(context, merchant);
  let message: Record<string, unknown>;
  try {
    const now = Date.now();
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
  if (details.authMethod !== "PAN_ONLY") {
    throw refusal("unsupported_auth_method", "only PAN_ONLY tokens are decrypted into the vault here; CRYPTOGRAM_3DS is not supported yet");
  }
  // The card follows a card token's rules, as POST /token-intents checks them (its messages never show the values).
  const card = CreateTokenIntentBody.safeParse({ type: "card", data: cardOf(details) });
  if (!card.success) throw refusal("invalid_card", "the decrypted card is not a valid card");
  const intent = await createTokenIntent(context, principal, card.data);
  return { token_intent: intent };
}
