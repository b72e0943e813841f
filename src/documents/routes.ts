import { createRoute } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { createRouter } from "../http/router";
import { IdParams, jsonContent, problemResponses } from "../http/schemas";
import { DocumentBytes, DocumentSchema, DocumentUploadBody } from "./schema";
import * as documents from "./service";

/*
 * Documents over HTTP: files stored encrypted in R2 (docs/documents.md). The upload's body is read
 * by the service as a stream, never by a validator (one would read the form whole), so its route
 * is documented in the OpenAPI registry and mounted as a plain handler.
 */

const tags = ["Documents"];
const security = [{ ApiKey: [] }];

const EXAMPLE = {
  id: "a05d2a09-b4f4-4ce7-9743-ab18d3aa8a43",
  tenant_id: "064bbc70-204b-4ef1-a757-ec0878be5945",
  metadata: { name: "value" },
  content_type: "application/pdf",
  created_by: "f0f504e5-79c2-40a6-aad3-dbee7a692828",
  created_at: "2025-07-18T14:41:08.254Z",
};

const upload = createRoute({
  method: "post",
  path: "/documents",
  tags,
  security,
  summary: "Upload a document, stored encrypted",
  description:
    "Needs `documents:create`. A multipart/form-data body with a `document` file part (at most 25 MiB; its Content-Type is " +
    'kept) and an optional `request` part, the JSON `{"metadata": {…}}` of string values. The file is encrypted as it ' +
    "arrives under a data key of its own and stored; nothing is kept when the upload is refused (413 over the limit).",
  request: {
    body: {
      content: {
        "multipart/form-data": {
          schema: DocumentUploadBody,
          example: { request: '{"metadata":{"name":"value"}}', document: "<the file's bytes>" },
        },
      },
      required: true,
    },
  },
  responses: {
    201: jsonContent(DocumentSchema, "The document's metadata", EXAMPLE),
    ...problemResponses(400, 401, 403, 413, 415),
  },
});

const get = createRoute({
  method: "get",
  path: "/documents/{id}",
  tags,
  security,
  summary: "Read a document's metadata",
  description: "Needs `documents:read`. Never the document's bytes.",
  middleware: [requirePermission("documents:read")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(DocumentSchema, "The document's metadata", EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const data = createRoute({
  method: "get",
  path: "/documents/{id}/data",
  tags,
  security,
  summary: "Download a document's bytes, decrypted",
  description:
    "Needs `documents:reveal`. The document as uploaded, with its Content-Type, decrypted as it streams. Stored bytes that " +
    "fail their integrity check are never answered: a 500 before the first byte, or a body that ends in an error.",
  middleware: [requirePermission("documents:reveal")] as const,
  request: { params: IdParams },
  responses: {
    200: {
      description: "The document's bytes, with the Content-Type it was uploaded with",
      content: { "application/octet-stream": { schema: DocumentBytes, example: "%PDF-1.7 …" } },
    },
    ...problemResponses(400, 401, 403, 404, 500),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/documents/{id}",
  tags,
  security,
  summary: "Delete a document",
  description: "Needs `documents:delete`. Its stored bytes are deleted with it.",
  middleware: [requirePermission("documents:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

/** POST /documents, whose body may be far larger than the API's limit: it counts its own (DOCUMENTS.maxBytes). */
export const isDocumentUpload = (method: string, path: string) => method === "POST" && path === "/documents";

/**
 * A document is served from the vault's own origin, where the console's session lives: whatever
 * type the uploader gave it (an HTML page with script), it is an attachment, sandboxed and never
 * sniffed, so opening it runs nothing there.
 */
const INERT = { "content-disposition": "attachment", "content-security-policy": "sandbox", "x-content-type-options": "nosniff" };

export const documentRoutes = createRouter();
documentRoutes.openAPIRegistry.registerPath(upload);
documentRoutes.post("/documents", requirePermission("documents:create"), async (c) =>
  c.json(await documents.uploadDocument(c.var.context, c.var.principal, c.req.raw), 201),
);
documentRoutes
  .openapi(get, async (c) => c.json(await documents.getDocument(c.var.context, c.req.valid("param").id), 200))
  .openapi(data, async (c) => {
    const { body, row } = await documents.openDocument(c.var.context, c.req.valid("param").id);
    return new Response(body, { status: 200, headers: { "content-type": row.contentType, ...INERT } });
  })
  .openapi(remove, async (c) => {
    await documents.deleteDocument(c.var.context, c.req.valid("param").id);
    return c.body(null, 204);
  });
