import { z } from "@hono/zod-openapi";
import { Uuid } from "../http/schemas";
import { GOOGLE_PAY } from "../limits";
import { TokenIntentSchema } from "../token-intents/schema";
import { strict } from "../tokens/schema";

export const MerchantRegistrationBody = z
  .strictObject(
    {
      merchant_identifier: z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,100}$/, "must be 1-100 letters, digits, dots, dashes or underscores")
        .openapi({ description: "Your Google merchant id: tokens must be signed for the recipient `merchant:<merchant_identifier>`" }),
    },
    strict,
  )
  .openapi("GooglePayMerchantRegistrationRequest");
export type MerchantRegistrationInput = z.infer<typeof MerchantRegistrationBody>;

export const MerchantRegistrationSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    merchant_identifier: z.string(),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("GooglePayMerchantRegistration");
export type MerchantRegistrationResponse = z.infer<typeof MerchantRegistrationSchema>;

export const MerchantKeyBody = z
  .strictObject(
    {
      merchant_certificate_data: z
        .string()
        .min(1)
        .max(4_096)
        .openapi({ description: "The merchant's ECv2 private key: an EC P-256 key as PKCS #8, base64 (DER) or PEM" }),
      merchant_certificate_password: z
        .string()
        .max(0, "must be empty: the key is taken as unencrypted PKCS #8, not as a PKCS #12 file")
        .optional()
        .openapi({ description: "Accepted for the original interface's clients; must be empty or absent" }),
    },
    strict,
  )
  .openapi("GooglePayMerchantCertificatesRequest");
export type MerchantKeyInput = z.infer<typeof MerchantKeyBody>;

export const MerchantKeySchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    merchant_certificate_fingerprint: z.string().openapi({ description: "SHA-256 of the public key's uncompressed point, hex" }),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("GooglePayMerchantCertificates");
export type MerchantKeyResponse = z.infer<typeof MerchantKeySchema>;

export const MerchantKeyParams = z.object({
  merchant_id: Uuid.openapi({ param: { name: "merchant_id", in: "path" } }),
  id: Uuid.openapi({ param: { name: "id", in: "path" } }),
});
export const MerchantParams = z.object({ merchant_id: Uuid.openapi({ param: { name: "merchant_id", in: "path" } }) });

const Base64Text = (max: number) => z.string().min(1).max(max);

/** Google's payment method token, as Google Pay hands it to the page or app (ECv2). */
const GooglePaymentData = z
  .strictObject(
    {
      protocolVersion: z.string().max(16),
      signature: Base64Text(200),
      intermediateSigningKey: z.strictObject(
        {
          signedKey: Base64Text(GOOGLE_PAY.maxSignedKeyChars),
          signatures: z.array(Base64Text(200)).min(1).max(GOOGLE_PAY.maxIntermediateSignatures),
        },
        strict,
      ),
      signedMessage: Base64Text(GOOGLE_PAY.maxSignedMessageChars),
    },
    strict,
  )
  .openapi("GooglePayMethodToken");

export const CreateGooglePayBody = z
  .strictObject(
    {
      google_payment_data: GooglePaymentData,
      merchant_registration_id: Uuid.optional().openapi({
        description: "The merchant registration whose keys decrypt the token; may be left out when the tenant has exactly one",
      }),
      expires_at: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time" }).optional().openapi({
        description:
          "When a CRYPTOGRAM_3DS token's resource expires (in the future; none when left out); a PAN_ONLY token's intent lives a day whatever it says",
      }),
    },
    strict,
  )
  .openapi("GooglePayCreateRequest");
export type CreateGooglePayInput = z.infer<typeof CreateGooglePayBody>;

const GooglePayCardSchema = z
  .object({
    bin: z.string().optional().openapi({ description: "Under `google-pay:reveal` only" }),
    last4: z.string(),
    expiration_month: z.number(),
    expiration_year: z.number(),
    brand: z.string().optional(),
  })
  .openapi("GooglePayCardDetails");

const GooglePayDetailsSchema = z
  .object({
    tsp: z.literal("Google"),
    auth_method: z.string(),
    message_id: z.string(),
    eci_indicator: z.string(),
    assurance_details: z.object({ account_verified: z.boolean(), card_holder_authenticated: z.boolean() }).optional(),
  })
  .openapi("GooglePayTokenDetails");

/** The device card of a CRYPTOGRAM_3DS token (the original interface's `google_pay` resource). */
export const GooglePayResourceSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    status: z.literal("active"),
    expires_at: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    card: GooglePayCardSchema.optional().openapi({ description: "The card's facts; never for public and session keys" }),
    data: z.object({ number: z.string(), expiration_month: z.number(), expiration_year: z.number() }).optional().openapi({
      description: "On GET: the card, whole under `google-pay:reveal`, its number masked to the last four under `google-pay:read`",
    }),
    authentication: z
      .object({ threeds_cryptogram: z.string(), eci_indicator: z.string() })
      .optional()
      .openapi({ description: "On GET under `google-pay:reveal`, until the cryptogram's retention ends (docs/api.md)" }),
    details: GooglePayDetailsSchema.optional(),
  })
  .openapi("GooglePayToken");
export type GooglePayResource = z.infer<typeof GooglePayResourceSchema>;

/**
 * What DELETE /google-pay/{id} answers: the deleted resource's id as a JSON string. The docs show a
 * summary object, but the Node SDK 5.7's `googlePay.delete` reads a string and throws on an object.
 */
export const GooglePayDeletedSchema = z.string().openapi({ description: "The deleted resource's id" });

export const GooglePayCreateSchema = z
  .object({
    token_intent: TokenIntentSchema.optional().openapi({ description: "The card of a PAN_ONLY token, as a token intent" }),
    google_pay: GooglePayResourceSchema.optional().openapi({ description: "The device card of a CRYPTOGRAM_3DS token" }),
  })
  .openapi("GooglePayCreateResponse");
export type GooglePayCreateResponse = z.infer<typeof GooglePayCreateSchema>;
