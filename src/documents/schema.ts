import { z } from "@hono/zod-openapi";
import { TOKENS } from "../limits";

/** The `request` part of POST /documents: the document's metadata, string values as a token's. */
export const DocumentRequest = z
  .strictObject({
    metadata: z
      .record(
        z.string().min(1, "keys must not be empty").max(TOKENS.metadataKeyMaxLength),
        z.string({ error: "must be a string" }).max(TOKENS.metadataValueMaxLength),
        { error: "must be an object of string values" },
      )
      .refine((metadata) => Object.keys(metadata).length <= TOKENS.maxMetadataEntries, {
        message: `must hold at most ${TOKENS.maxMetadataEntries} entries`,
      })
      .optional(),
  })
  .openapi("CreateDocumentRequest");

export const DocumentUploadBody = z
  .object({
    request: z.string().optional().openapi({ description: 'JSON: `{"metadata": {"name": "value"}}`' }),
    document: z.string().openapi({ type: "string", format: "binary", description: "The file; its part's Content-Type is kept" }),
  })
  .openapi("DocumentUpload");

export const DocumentSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    metadata: z.record(z.string(), z.string()),
    content_type: z.string(),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("Document");
export type DocumentResponse = z.infer<typeof DocumentSchema>;

/** GET /documents/{id}/data's answer: the bytes as uploaded. */
export const DocumentBytes = z.string().openapi({ format: "binary", description: "The document's bytes" });
