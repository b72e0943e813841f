import { getMultipartBoundary, MultipartParseError, MultipartParser, type MultipartPart } from "@mjackson/multipart-parser";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../errors";
import { DOCUMENTS } from "../limits";
import { SEALED_CHUNK_BYTES, sealChunk } from "./chunks";

/*
 * POST /documents' body, read as a stream: the multipart parser (@mjackson/multipart-parser 0.6.3, the
 * last release whose parts are streams; later ones hold each part whole) hands over the `document`
 * part as it arrives, its plaintext is sealed a chunk at a time (chunks.ts), and the sealed chunks
 * go to R2 in parts of a multipart upload. At no point is more than one upload part of the document
 * in memory (plus what the pacing below lets the parser run ahead).
 */

/** Sealed chunks per upload part: R2 wants every part but the last of one size, and at least 5 MiB. */
const CHUNKS_PER_PART = Math.ceil((5 * 1024 * 1024) / SEALED_CHUNK_BYTES);
const PART_BYTES = CHUNKS_PER_PART * SEALED_CHUNK_BYTES;

/**
 * How far the parser may read the request ahead of what has been consumed of its parts. The parser
 * pushes into a part's stream without waiting for its reader, so without this pace a slow upload to
 * R2 would leave the rest of the request queued in memory.
 */
const READ_AHEAD_BYTES = 1024 * 1024;

/** The longest boundary RFC 2046 allows a multipart body. */
const MAX_BOUNDARY_LENGTH = 70;

/** What the upload read: the metadata request's JSON text, the document's media type and plaintext size. */
export interface ReadUpload {
  requestText: string | undefined;
  contentType: string;
  size: number;
}

/** The pace between the request body and the parts' readers. */
class Pace {
  private fed = 0;
  private consumed = 0;
  private waiting: (() => void) | null = null;
  private reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  private stopped = false;

  constructor(private readonly body: ReadableStream<Uint8Array>) {}

  /** The request body, read no further than READ_AHEAD_BYTES past what was consumed. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    this.reader = this.body.getReader();
    while (!this.stopped) {
      while (this.fed - this.consumed > READ_AHEAD_BYTES && !this.stopped) await new Promise<void>((resolve) => (this.waiting = resolve));
      if (this.stopped) return;
      const read = await this.reader.read().catch((error) => {
        // Stopped while a read was pending: the parser's error is no longer anyone's.
        if (this.stopped) return { done: true as const, value: undefined };
        throw error;
      });
      if (read.done) return;
      const value = read.value;
      this.fed += value.length;
      yield value;
    }
  }

  consume(bytes: number): void {
    this.consumed += bytes;
    this.waiting?.();
    this.waiting = null;
  }

  /**
   * Stops reading the request: what the parser has not read is left unread (cancelling the body
   * would fail the client's send with an error of its own before it reads the answer).
   */
  stop(): void {
    this.stopped = true;
    this.waiting?.();
  }
}

/**
 * The chunks of one part's body as they arrive. A parse that fails (a form cut short) leaves the
 * part's stream open, so `failure` cancels the readers it finds and each then ends in that error.
 */
class PartReaders {
  failure: unknown = null;
  private readonly readers = new Set<ReadableStreamDefaultReader<Uint8Array>>();

  async *chunks(part: MultipartPart, pace: Pace): AsyncGenerator<Uint8Array> {
    const reader = part.body.getReader();
    this.readers.add(reader);
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (this.failure !== null) throw this.failure;
        if (done) return;
        pace.consume(value.length);
        yield value;
      }
    } finally {
      this.readers.delete(reader);
    }
  }

  fail(error: unknown): void {
    this.failure ??= error;
    for (const reader of this.readers) reader.cancel().catch(() => undefined);
  }
}

/** Reads a part whole, refusing it past `limit` bytes. */
async function readSmallPart(chunks: AsyncIterable<Uint8Array>, limit: number, name: string): Promise<string> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    length += chunk.length;
    if (length > limit) throw ValidationError.field(name, `must be at most ${limit} bytes`);
    parts.push(chunk);
  }
  const text = new Uint8Array(length);
  let offset = 0;
  for (const chunk of parts) {
    text.set(chunk, offset);
    offset += chunk.length;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(text);
  } catch {
    throw ValidationError.field(name, "must be valid UTF-8");
  }
}

/**
 * Seals the document part's plaintext into `upload`, part by part. A chunk is sealed as final only
 * when the part has ended, so a full last chunk waits until the end is known.
 */
async function sealDocumentPart(
  body: AsyncIterable<Uint8Array>,
  key: CryptoKey,
  context: Uint8Array,
  upload: R2MultipartUpload,
  uploaded: R2UploadedPart[],
): Promise<number> {
  const chunk = new Uint8Array(DOCUMENTS.chunkBytes);
  let filled = 0;
  let index = 0;
  let size = 0;
  let outgoing = new Uint8Array(PART_BYTES);
  let outgoingFilled = 0;
  const sendOutgoing = async () => {
    uploaded.push(await upload.uploadPart(uploaded.length + 1, outgoing.subarray(0, outgoingFilled)));
    outgoing = new Uint8Array(PART_BYTES);
    outgoingFilled = 0;
  };
  const seal = async (final: boolean) => {
    const sealed = await sealChunk(key, context, index++, final, chunk.subarray(0, filled));
    outgoing.set(sealed, outgoingFilled);
    outgoingFilled += sealed.length;
    filled = 0;
    if (outgoingFilled === PART_BYTES && !final) await sendOutgoing();
  };
  for await (const bytes of body) {
    size += bytes.length;
    if (size > DOCUMENTS.maxBytes) throw new PayloadTooLargeError(DOCUMENTS.maxBytes);
    let offset = 0;
    while (offset < bytes.length) {
      if (filled === DOCUMENTS.chunkBytes) await seal(false);
      const take = Math.min(DOCUMENTS.chunkBytes - filled, bytes.length - offset);
      chunk.set(bytes.subarray(offset, offset + take), filled);
      filled += take;
      offset += take;
    }
  }
  await seal(true);
  await sendOutgoing();
  return size;
}

/** A media type as a part names it (`type/subtype`, parameters dropped), or octet-stream. */
function mediaTypeOf(part: MultipartPart): string {
  const mediaType = part.mediaType?.trim().toLowerCase();
  return mediaType && /^[a-z0-9!#$&^_.+-]{1,127}\/[a-z0-9!#$&^_.+-]{1,127}$/.test(mediaType) ? mediaType : "application/octet-stream";
}

/**
 * Reads POST /documents' multipart body into `upload` (sealed with `key`), answering the request
 * part's text and what the document part was. Throws a 4xx for a body that is not such a form, a
 * missing or repeated part, an unknown part, or a document over DOCUMENTS.maxBytes; the caller
 * aborts the upload then.
 */
export async function readUpload(
  request: Request,
  key: CryptoKey,
  context: Uint8Array,
  upload: R2MultipartUpload,
  uploaded: R2UploadedPart[],
): Promise<ReadUpload> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!contentType.toLowerCase().startsWith("multipart/form-data")) throw new UnsupportedMediaTypeError(["multipart/form-data"]);
  const boundary = getMultipartBoundary(contentType);
  if (!boundary || !request.body) throw ValidationError.field("document", "is required");
  // RFC 2046's bound: the parser searches every byte of the body for the boundary, so its length is a cost per byte.
  if (boundary.length > MAX_BOUNDARY_LENGTH) {
    throw new ValidationError(`The form's boundary must be at most ${MAX_BOUNDARY_LENGTH} characters (RFC 2046)`);
  }
  const declaredLength = Number(request.headers.get("content-length") ?? 0);
  // A body declared longer than the largest document and its form can be is refused before a byte is read.
  if (declaredLength > DOCUMENTS.maxBytes + DOCUMENTS.requestMaxBytes + 64 * 1024) throw new PayloadTooLargeError(DOCUMENTS.maxBytes);
  const pace = new Pace(request.body);
  const readers = new PartReaders();
  let requestText: string | undefined;
  let document: { contentType: string; size: number } | undefined;
  const handlePart = async (part: MultipartPart): Promise<void> => {
    if (part.name === "request" && requestText === undefined) {
      requestText = "";
      requestText = await readSmallPart(readers.chunks(part, pace), DOCUMENTS.requestMaxBytes, "request");
    } else if (part.name === "document" && document === undefined) {
      document = { contentType: mediaTypeOf(part), size: 0 };
      document.size = await sealDocumentPart(readers.chunks(part, pace), key, context, upload, uploaded);
    } else {
      throw ValidationError.field(part.name ?? "form", "is not a part of this form (one `document` file and one `request`)");
    }
  };
  const handled: Promise<void>[] = [];
  const stop = (error: unknown) => {
    readers.fail(error);
    pace.stop();
  };
  const parsing = new MultipartParser(boundary, { maxHeaderSize: 8 * 1024 }).parse(pace.chunks(), (part) => {
    handled.push(handlePart(part).catch(stop));
  });
  await parsing.catch(stop);
  await Promise.all(handled);
  if (readers.failure !== null) {
    const error = readers.failure;
    if (error instanceof MultipartParseError)
      throw new ValidationError(`The body is not a valid multipart/form-data message: ${error.message}`);
    throw error;
  }
  if (!document) throw ValidationError.field("document", "is required");
  return { requestText, ...document };
}
