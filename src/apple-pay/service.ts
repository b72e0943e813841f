/**
 * Apple Pay: merchant registrations with their payment processing certificates (the private key
 * sealed under the tenant's data key, never answered), and EC_v1 payment tokens verified, decrypted
 * with them, and kept as Apple Pay tokens (tokens.ts; docs/decisions.md, "Apple Pay").
 */
import { z } from "@hono/zod-openapi";
import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { fromBase64, toBase64 } from "../crypto/encoding";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { APPLE_PAY } from "../limits";
import { readCredentials } from "./credentials";
import { certificateOf, decryptPaymentData, merchantIdHashOf, signingClock, TokenRefusal, verifySignature } from "./ec-v1";
import type {
  ApplePayInput,
  ApplePayTokenResponse,
  CertificatesInput,
  CertificatesResponse,
  MerchantRegistrationInput,
  MerchantResponse,
} from "./schema";
import * as storage from "./storage";
import { storeApplePayToken } from "./tokens";

/** Additional data of a certificate's private key ciphertext: a ciphertext moved to another row fails to decrypt. */
export const processingKeyContext = (id: string) => `apple-pay-certificates/${id}/private-key`;

const PAYMENT_DATA = "apple_payment_data.paymentData";

function toMerchantResponse(row: storage.MerchantRow): MerchantResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    merchant_identifier: row.merchantIdentifier,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
  };
}

function toCertificatesResponse(row: storage.CertificateRow): CertificatesResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    merchant_registration_id: row.merchantRegistrationId,
    domain: row.domain,
    payment_processor_certificate_expiration_date: isoTime(row.expiresAt)!,
    payment_processor_certificate_fingerprint: row.fingerprint,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
  };
}

export async function registerMerchant(
  context: TenantContext,
  principal: Principal,
  input: MerchantRegistrationInput,
): Promise<MerchantResponse> {
  const row: storage.MerchantRow = {
    id: crypto.randomUUID(),
    tenantId: principal.tenantId,
    merchantIdentifier: input.merchant_identifier ?? principal.tenantId,
    createdBy: principal.applicationId,
    createdAt: Date.now(),
  };
  if (!(await storage.insertMerchant(context.control, row, APPLE_PAY.maxMerchantsPerTenant))) {
    throw new ConflictError(`A tenant holds at most ${APPLE_PAY.maxMerchantsPerTenant} Apple Pay merchant registrations; delete one first`);
  }
  context.audit.describe({ entityId: row.id });
  return toMerchantResponse(row);
}

export async function getMerchant(context: TenantContext, id: string): Promise<MerchantResponse> {
  const row = await storage.findMerchant(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Apple Pay merchant registration ${id}`);
  return toMerchantResponse(row);
}

/** Deleting a registration destroys its certificates' private keys: tokens encrypted to them no longer decrypt. */
export async function deleteMerchant(context: TenantContext, id: string): Promise<void> {
  if (!(await storage.deleteMerchant(context.control, context.tenantId, id)))
    throw new NotFoundError(`Apple Pay merchant registration ${id}`);
}

export async function registerCertificates(
  context: TenantContext,
  principal: Principal,
  merchantId: string,
  input: CertificatesInput,
): Promise<CertificatesResponse> {
  if (!(await storage.findMerchant(context.control, context.tenantId, merchantId))) {
    throw new NotFoundError(`Apple Pay merchant registration ${merchantId}`);
  }
  const credentials = await readCredentials(input.payment_processor_certificate_data, input.payment_processor_certificate_password);
  const id = crypto.randomUUID();
  const keys = await context.keys();
  const row: storage.CertificateRow = {
    id,
    tenantId: principal.tenantId,
    merchantRegistrationId: merchantId,
    domain: input.domain ?? null,
    certificate: toBase64(credentials.der),
    publicKeyHash: credentials.publicKeyHash,
    fingerprint: credentials.fingerprint,
    privateKeyCiphertext: await keys.encrypt(toBase64(credentials.pkcs8), processingKeyContext(id)),
    expiresAt: credentials.expiresAt,
    createdBy: principal.applicationId,
    createdAt: Date.now(),
  };
  if (!(await storage.insertCertificate(context.control, row, APPLE_PAY.maxCertificatesPerMerchant))) {
    if (!(await storage.findMerchant(context.control, context.tenantId, merchantId))) {
      throw new NotFoundError(`Apple Pay merchant registration ${merchantId}`);
    }
    throw new ConflictError(
      `A merchant registration holds at most ${APPLE_PAY.maxCertificatesPerMerchant} payment processing certificates; delete one first`,
    );
  }
  context.audit.describe({ entityId: id });
  return toCertificatesResponse(row);
}

export async function getCertificates(context: TenantContext, merchantId: string, id: string): Promise<CertificatesResponse> {
  const row = await storage.findCertificate(context.control, context.tenantId, merchantId, id);
  if (!row) throw new NotFoundError(`Apple Pay merchant certificates ${id}`);
  return toCertificatesResponse(row);
}

export async function deleteCertificates(context: TenantContext, merchantId: string, id: string): Promise<void> {
  if (!(await storage.deleteCertificate(context.control, context.tenantId, merchantId, id))) {
    throw new NotFoundError(`Apple Pay merchant certificates ${id}`);
  }
}

/** The decrypted payment data, as Apple's payment token format defines it (the members the vault reads). */
const DecryptedPaymentData = z.object({
  applicationPrimaryAccountNumber: z.string().regex(/^\d{12,19}$/),
  applicationExpirationDate: z.string().regex(/^\d{2}(0[1-9]|1[0-2])\d{2}$/),
  deviceManufacturerIdentifier: z.string().max(64).optional(),
  paymentDataType: z.string().max(64).optional(),
  paymentData: z
    .object({ onlinePaymentCryptogram: z.string().min(1).max(256).optional(), eciIndicator: z.string().max(8).optional() })
    .optional(),
});

/** The certificate whose key the token was encrypted to, and that key, unsealed. */
async function processingKeyFor(context: TenantContext, input: ApplePayInput) {
  const row = await storage.certificateByKeyHash(
    context.control,
    context.tenantId,
    input.apple_payment_data.paymentData.header.publicKeyHash,
    input.merchant_registration_id,
  );
  if (!row) {
    throw ValidationError.field(
      `${PAYMENT_DATA}.header.publicKeyHash`,
      "names no payment processing certificate registered by this tenant (or by the merchant registration named)",
    );
  }
  const pkcs8 = await (await context.keys()).decrypt(row.privateKeyCiphertext, processingKeyContext(row.id));
  const privateKey = await crypto.subtle.importKey("pkcs8", fromBase64(pkcs8), { name: "ECDH", namedCurve: "P-256" }, false, [
    "deriveBits",
  ]);
  const merchantIdHash = merchantIdHashOf(certificateOf(fromBase64(row.certificate)))!;
  return { privateKey, merchantIdHash };
}

/**
 * Verifies the token's signature (before any key of the tenant is read), decrypts it with the
 * processing key its `publicKeyHash` names, and keeps the device card, with its cryptogram and ECI,
 * as an Apple Pay token. Any refusal is a 400 and nothing is stored.
 */
export async function createApplePayToken(
  context: TenantContext,
  principal: Principal,
  input: ApplePayInput,
): Promise<{ apple_pay: ApplePayTokenResponse }> {
  const token = input.apple_payment_data.paymentData;
  let plaintext: unknown;
  try {
    await verifySignature(token, signingClock.now());
    const { privateKey, merchantIdHash } = await processingKeyFor(context, input);
    plaintext = await decryptPaymentData(token, privateKey, merchantIdHash);
  } catch (error) {
    if (error instanceof TokenRefusal) throw ValidationError.field(PAYMENT_DATA, error.message);
    throw error;
  }
  const parsed = DecryptedPaymentData.safeParse(plaintext);
  if (!parsed.success) throw ValidationError.field(PAYMENT_DATA, "decrypts to payment data that is not Apple's format");
  const payment = parsed.data;
  const expiry = payment.applicationExpirationDate;
  const cryptogram = payment.paymentData?.onlinePaymentCryptogram;
  const eci = payment.paymentData?.eciIndicator;
  const stored = await storeApplePayToken(
    context,
    principal,
    {
      card: {
        number: payment.applicationPrimaryAccountNumber,
        expiration_month: Number(expiry.slice(2, 4)),
        expiration_year: 2000 + Number(expiry.slice(0, 2)),
      },
      authentication: cryptogram ? { threeds_cryptogram: cryptogram, ...(eci ? { eci_indicator: eci } : {}) } : null,
      transactionId: token.header.transactionId,
      paymentDataType: payment.paymentDataType,
      deviceManufacturerIdentifier: payment.deviceManufacturerIdentifier,
    },
    input.expires_at,
  );
  return { apple_pay: stored };
}
