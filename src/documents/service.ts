import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { fromBase64, toBase64 } from "../crypto/encoding";
import { NotFoundError, ProblemError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { chunkContext, DocumentIntegrityError, importDataKey, openingStream, SEALED_CHUNK_BYTES } from "./chunks";
import { DocumentRequest, type DocumentResponse } from "./schema";
import type { DocumentRow } from "./storage";
import * as storage from "./storage";
import { readUpload } from "./upload";

/** Additional data of a document's sealed data key: a key copied onto another document fails to open. */
export const dataKeyContext = (id: string) => `documents/${id}/data-key`;

/** A stored document whose bytes do not open (changed, cut short or swapped in the bucket): nothing of it is answered. */
export class DocumentUnreadableError extends ProblemError {
  constructor(id: string) {
    super(500, "Document Unreadable", `Document ${id} failed its integrity check; its stored bytes were altered`);
  }
}

function toDocumentResponse(row: DocumentRow): DocumentResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    metadata: JSON.parse(row.metadata),
    content_type: row.contentType,
    created_by: row.createdBy,
    created_at: isoTime(row.createdAt)!,
  };
}

function metadataOf(requestText: string | undefined): Record<string, string> {
  if (requestText === undefined || requestText.trim() === "") return {};
  let json: unknown;
  try {
    json = JSON.parse(requestText);
  } catch {
    throw ValidationError.field("request", "must be JSON");
  }
  const parsed = DocumentRequest.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw ValidationError.field(["request", ...issue.path].join("."), issue.message);
  }
  return parsed.data.metadata ?? {};
}

/**
 * Stores an uploaded document: its bytes sealed under a new data key into the bucket as they
 * arrive, then its row (metadata and the sealed data key). Anything refused on the way (a bad form,
 * too large, bad metadata) aborts the upload, so nothing is kept; a row that cannot be written
 * deletes the object it described.
 */
export async function uploadDocument(context: TenantContext, principal: Principal, request: Request): Promise<DocumentResponse> {
  const id = crypto.randomUUID();
  const dataKey = crypto.getRandomValues(new Uint8Array(32));
  const key = await importDataKey(dataKey);
  const objectKey = storage.objectKeyOf(context.tenantId, id);
  const upload = await context.documents.createMultipartUpload(objectKey);
  const uploaded: R2UploadedPart[] = [];
  let row: DocumentRow;
  try {
    const read = await readUpload(request, key, chunkContext(context.tenantId, id), upload, uploaded);
    const metadata = metadataOf(read.requestText);
    row = {
      id,
      tenantId: context.tenantId,
      metadata: JSON.stringify(metadata),
      contentType: read.contentType,
      size: read.size,
      dataKeyCiphertext: await (await context.keys()).encrypt(toBase64(dataKey), dataKeyContext(id)),
      createdBy: principal.applicationId,
      createdAt: Date.now(),
    };
  } catch (error) {
    await upload.abort();
    throw error;
  }
  await upload.complete(uploaded);
  try {
    await storage.insertDocument(context.control, row);
  } catch (error) {
    await context.documents.delete(objectKey);
    throw error;
  }
  context.audit.describe({ entityId: id });
  return toDocumentResponse(row);
}

async function documentOf(context: TenantContext, id: string): Promise<DocumentRow> {
  const row = await storage.findDocument(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Document ${id}`);
  return row;
}

export async function getDocument(context: TenantContext, id: string): Promise<DocumentResponse> {
  return toDocumentResponse(await documentOf(context, id));
}

/**
 * The document's bytes, decrypted as they stream from the bucket. The first chunk is opened before
 * the answer starts, so an object altered there is a 500 with no byte of it; a later chunk that does
 * not open ends the stream in an error short of its Content-Length, and the client never receives
 * that chunk's bytes.
 */
export async function openDocument(context: TenantContext, id: string): Promise<{ body: ReadableStream<Uint8Array>; row: DocumentRow }> {
  const row = await documentOf(context, id);
  const objectKey = storage.objectKeyOf(context.tenantId, id);
  // The first chunk alone, read whole, then the rest as a stream: a first chunk that does not open
  // leaves no stream of the object half read.
  const head = await context.documents.get(objectKey, { range: { offset: 0, length: SEALED_CHUNK_BYTES } });
  if (!head) throw new DocumentUnreadableError(id);
  const headBytes = new Uint8Array(await head.arrayBuffer());
  const dataKey = fromBase64(await (await context.keys()).decrypt(row.dataKeyCiphertext, dataKeyContext(id)));
  const opening = openingStream(await importDataKey(dataKey), chunkContext(context.tenantId, id), head.size);
  const feeder = opening.writable.getWriter();
  feeder.closed.catch(() => undefined);
  const reader = opening.readable.getReader();
  // The first chunk opens before the rest is asked for: an object altered there is refused without
  // a stream of the rest opened only to be cut. A one-chunk object opens as the stream closes.
  const whole = head.size <= SEALED_CHUNK_BYTES;
  feeder.write(headBytes).catch(() => undefined);
  if (whole) feeder.close().catch(() => undefined);
  let first: ReadableStreamReadResult<Uint8Array>;
  try {
    first = await reader.read();
  } catch (error) {
    if (error instanceof DocumentIntegrityError) throw new DocumentUnreadableError(id);
    throw error;
  }
  const feedRest = async () => {
    try {
      const rest = await context.documents.get(objectKey, { range: { offset: SEALED_CHUNK_BYTES } });
      if (!rest) throw new DocumentIntegrityError(1);
      for await (const bytes of rest.body) await feeder.write(bytes);
      await feeder.close();
    } catch (error) {
      // Its failure reaches the answer below as the readable side's error.
      await feeder.abort(error).catch(() => undefined);
    }
  };
  if (!whole) feedRest();
  // The answer is a stream of the document's declared length: a body that ends early (a later chunk
  // did not open) is one no client can take for the whole document, and it errors the connection
  // without a rejection that nobody handles (a JavaScript stream's error would leave one in workerd).
  const { readable, writable } = new FixedLengthStream(row.size);
  const writer = writable.getWriter();
  const answer = async () => {
    try {
      for (let next = first; !next.done; next = await reader.read()) await writer.write(next.value);
      await writer.close();
    } catch (error) {
      // A chunk that did not open, or a client that went away: both sides stop.
      await Promise.all([writer.abort(error).catch(() => undefined), reader.cancel(error).catch(() => undefined)]);
    }
  };
  answer();
  context.audit.describe({ entityId: id });
  return { body: readable, row };
}

/** Deleting a document deletes its row, then its object: a row without an object is never left. */
export async function deleteDocument(context: TenantContext, id: string): Promise<void> {
  if (!(await storage.deleteDocument(context.control, context.tenantId, id))) throw new NotFoundError(`Document ${id}`);
  await context.documents.delete(storage.objectKeyOf(context.tenantId, id));
  context.audit.describe({ entityId: id });
}
