import { z } from "@hono/zod-openapi";
import { isEncryptedData, JWE_NOT_OPENED_HERE } from "../client-keys/jwe";
import { utf8 } from "../crypto/encoding";
import { eitherByMember, Uuid } from "../http/schemas";
import { TOKEN_INTENTS } from "../limits";
import { CreateTokenBody, refuseData, strict, TOKEN_REQUEST_MEMBERS, TokenData, TokenTypeSchema } from "../tokens/schema";

export const MAX_DATA_BYTES = TOKEN_INTENTS.maxDataBytes;

/** `type` and `data` only: what a token is defined by besides its data is the converting server's to choose. */
export const CreateTokenIntentBody = z
  .strictObject({ type: TokenTypeSchema, data: TokenData }, strict)
  .superRefine((intent, ctx) => {
    // Measured before the type's rules walk it: those never see more than the bound.
    if (intent.data !== undefined && utf8.encode(JSON.stringify(intent.data)).length > MAX_DATA_BYTES) {
      ctx.addIssue({ code: "custom", path: ["data"], message: `must be at most ${MAX_DATA_BYTES} bytes as JSON` });
      return;
    }
    if (isEncryptedData(intent.data)) {
      ctx.addIssue({ code: "custom", path: ["data"], message: JWE_NOT_OPENED_HERE });
      return;
    }
    refuseData(intent.type, intent.data, ctx);
  })
  .openapi("CreateTokenIntent");

export type CreateTokenIntent = z.infer<typeof CreateTokenIntentBody>;

/** A token intent's card, as the original interface's Card Details name it: never the whole number, never the cvc. */
const CardFactsSchema = z
  .object({
    bin: z
      .string()
      .optional()
      .openapi({ description: "The first 6 digits, or 8 for a number of 16 digits or more; only when the caller's rule reveals" }),
    last4: z.string(),
    expiration_month: z.number().int().optional(),
    expiration_year: z.number().int().optional(),
    brand: z.string().optional().openapi({ description: "From the number's leading digits; absent when no brand starts with them" }),
  })
  .openapi("TokenIntentCard");

const BankFactsSchema = z
  .object({
    routing_number: z.string(),
    account_number_last4: z.string().optional().openapi({ description: "Absent when the account number has 4 digits or fewer" }),
  })
  .openapi("TokenIntentBank");

export const TokenIntentSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    type: TokenTypeSchema,
    card: CardFactsSchema.optional().openapi({
      description:
        "For `card` and `card_number` intents, when the caller's rule for the type's container reveals or masks; never for public and session keys",
    }),
    bank: BankFactsSchema.optional().openapi({
      description:
        "For `bank` intents, when the caller's rule for the type's container reveals or masks; never for public and session keys",
    }),
    fingerprint: z.string().optional().openapi({
      description:
        "The fingerprint a token of the intent's data gets by default, when the caller's rule reveals or masks; never for public and session keys",
    }),
    created_by: z.string(),
    created_at: z.string(),
    expires_at: z.string(),
  })
  .openapi("TokenIntent");

export type TokenIntentResponse = z.infer<typeof TokenIntentSchema>;
export type CardFacts = z.infer<typeof CardFactsSchema>;
export type BankFacts = z.infer<typeof BankFactsSchema>;

/** POST /tokens with `token_intent_id`: the intent's type and data, with the token members a create takes. */
export const ConvertTokenIntentBody = z
  .strictObject(
    {
      token_intent_id: Uuid.openapi({ description: "The token intent to convert; it is deleted with the token's creation" }),
      ...TOKEN_REQUEST_MEMBERS,
    },
    strict,
  )
  .openapi("ConvertTokenIntent");

export type ConvertTokenIntent = z.infer<typeof ConvertTokenIntentBody>;

/** POST /tokens: a create request, or with `token_intent_id` a conversion of a token intent. */
export const CreateOrConvertTokenBody = eitherByMember("token_intent_id", ConvertTokenIntentBody, CreateTokenBody);
