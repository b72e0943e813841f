import { z } from "@hono/zod-openapi";

export const ClientKeyBody = z
  .strictObject({
    expires_at: z.iso
      .datetime({ offset: true, error: "must be an ISO 8601 date-time" })
      .optional()
      .openapi({ description: "When the key stops decrypting; at most one year ahead, and one year ahead when absent" }),
  })
  .openapi("ClientEncryptionKeyRequest");
export type ClientKeyInput = z.infer<typeof ClientKeyBody>;

export const ClientKeySchema = z
  .object({
    id: z.string(),
    key_id: z.string().openapi({ description: "The same as `id`: the name the original interface's SDKs read" }),
    expires_at: z.string(),
    created_at: z.string(),
  })
  .openapi("ClientEncryptionKey");
export type ClientKeyResponse = z.infer<typeof ClientKeySchema>;

export const CreatedClientKeySchema = ClientKeySchema.extend({
  public_key_pem: z.string().openapi({
    description:
      "The X25519 public key, its 32 bytes in base64 between PEM markers; shown only here. Encrypt to it a JWE (ECDH-ES, " +
      "A256GCM) whose protected header names this key's id as `kid`",
  }),
}).openapi("CreatedClientEncryptionKey");
export type CreatedClientKeyResponse = z.infer<typeof CreatedClientKeySchema>;
