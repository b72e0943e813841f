import { z } from "@hono/zod-openapi";
import { UNKNOWN_MEMBERS_REFUSED as strict, Uuid } from "../http/schemas";
import { APPLE_PAY } from "../limits";
import { FutureTime } from "../tokens/schema";

const base64 = (what: string, max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, "must be base64")
    .openapi({ description: what });
const hex = (what: string, max: number) =>
  z
    .string()
    .min(2)
    .max(max)
    .regex(/^(?:[0-9a-fA-F]{2})+$/, "must be hexadecimal")
    .openapi({ description: what });

export const MerchantRegistrationBody = z
  .strictObject(
    {
      merchant_identifier: z
        .string()
        .min(1)
        .max(255)
        .optional()
        .openapi({ description: "Apple's merchant identifier (`merchant.com.example`); the tenant's id when absent" }),
    },
    strict,
  )
  .openapi("ApplePayMerchantRegistrationRequest");
export type MerchantRegistrationInput = z.infer<typeof MerchantRegistrationBody>;

export const MerchantSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    merchant_identifier: z.string(),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("ApplePayMerchant");
export type MerchantResponse = z.infer<typeof MerchantSchema>;

export const CertificatesBody = z
  .strictObject(
    {
      payment_processor_certificate_data: base64(
        "The payment processing certificate Apple issued and its EC P-256 private key: a PKCS #12 file, or PEM text " +
          "holding the certificate and an unencrypted PKCS #8 key, in base64",
        APPLE_PAY.maxCertificateDataLength,
      ),
      payment_processor_certificate_password: z.string().max(256).openapi({ description: "The PKCS #12 file's password; empty for PEM" }),
      domain: z.string().min(1).max(253).optional().openapi({ description: "The domain the certificates serve; kept and answered" }),
    },
    strict,
  )
  .openapi("ApplePayMerchantCertificatesRequest");
export type CertificatesInput = z.infer<typeof CertificatesBody>;

export const CertificatesSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    merchant_registration_id: z.string(),
    domain: z.string().nullable(),
    payment_processor_certificate_expiration_date: z.string(),
    payment_processor_certificate_fingerprint: z.string().openapi({ description: "SHA-256 of the certificate (DER), hex" }),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("ApplePayMerchantCertificates");
export type CertificatesResponse = z.infer<typeof CertificatesSchema>;

export const CertificateParams = z.object({
  merchantId: Uuid.openapi({ param: { name: "merchantId", in: "path" } }),
  id: Uuid.openapi({ param: { name: "id", in: "path" } }),
});
export const MerchantParams = z.object({ merchantId: Uuid.openapi({ param: { name: "merchantId", in: "path" } }) });

const field = APPLE_PAY.maxTokenFieldLength;

export const PaymentDataSchema = z
  .strictObject(
    {
      version: z.literal("EC_v1", { error: "must be EC_v1 (RSA_v1 tokens are not accepted)" }),
      data: base64("The encrypted payment data", field),
      signature: base64("The detached CMS signature (PKCS #7) over the header and data", field),
      header: z.strictObject(
        {
          ephemeralPublicKey: base64("The sender's ephemeral P-256 public key (SubjectPublicKeyInfo, DER)", 1_024),
          publicKeyHash: base64("SHA-256 of the merchant certificate's public key", 64),
          transactionId: hex("The transaction id", 256),
          applicationData: hex("SHA-256 of the payment request's applicationData", 256).optional(),
        },
        strict,
      ),
    },
    strict,
  )
  .openapi("ApplePayPaymentData");
export type PaymentData = z.infer<typeof PaymentDataSchema>;

export const ApplePayBody = z
  .strictObject(
    {
      apple_payment_data: z
        .object({
          paymentData: PaymentDataSchema,
          paymentMethod: z
            .object({
              displayName: z.string().max(256).optional(),
              network: z.string().max(64).optional(),
              type: z.string().max(64).optional(),
            })
            .optional(),
          transactionIdentifier: z.string().max(256).optional(),
        })
        .openapi({ description: "Apple Pay's payment token, as the payment sheet hands it over" }),
      merchant_registration_id: Uuid.optional().openapi({
        description: "Decrypt only with this merchant registration's certificates; any of the tenant's when absent",
      }),
      expires_at: FutureTime.optional().openapi({
        description: "When the Apple Pay token expires; the end of the device card's expiration month when absent",
      }),
    },
    strict,
  )
  .openapi("ApplePayCreateRequest");
export type ApplePayInput = z.infer<typeof ApplePayBody>;

/** The card a decrypted token carries, as the original interface names it: never the whole number. */
const CardSchema = z
  .object({
    bin: z.string().optional().openapi({ description: "Under apple-pay:reveal only" }),
    last4: z.string(),
    expiration_month: z.number().int(),
    expiration_year: z.number().int(),
    brand: z.string().optional(),
  })
  .openapi("ApplePayCard");

const CardDataSchema = z
  .object({
    number: z.string().openapi({ description: "Whole under apple-pay:reveal; otherwise all but the last four digits masked" }),
    expiration_month: z.number().int(),
    expiration_year: z.number().int(),
  })
  .openapi("ApplePayCardData");

const AuthenticationSchema = z
  .object({
    threeds_cryptogram: z.string().openapi({ description: "The online payment cryptogram" }),
    eci_indicator: z.string().optional(),
  })
  .openapi("ApplePayAuthentication");

export const ApplePayTokenSchema = z
  .object({
    id: z.string(),
    type: z.literal("dpan"),
    tenant_id: z.string(),
    status: z.literal("active"),
    expires_at: z.string(),
    created_by: z.string(),
    created_at: z.string(),
    transaction_id: z.string(),
    payment_data_type: z.string().optional(),
    device_manufacturer_identifier: z.string().optional(),
    card: CardSchema.optional().openapi({ description: "The card's facts; never for public and session keys" }),
    data: CardDataSchema.optional().openapi({ description: "GET only: the card, masked unless the key holds apple-pay:reveal" }),
    authentication: AuthenticationSchema.optional().openapi({
      description: "GET under apple-pay:reveal only, and only until the cryptogram's retention ends (CARD_CVC_RETENTION_S after creation)",
    }),
  })
  .openapi("ApplePayToken");
export type ApplePayTokenResponse = z.infer<typeof ApplePayTokenSchema>;

export const ApplePayCreatedSchema = z.object({ apple_pay: ApplePayTokenSchema }).openapi("ApplePayCreateResponse");
