import { getMultipartBoundary, MultipartParseError, MultipartParser, type MultipartPart } from "@mjackson/multipart-parser";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../errors";
import { readBounded } from "../http/body";
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

/** How much may follow the form's close delimiter (an epilogue, which a form may carry and which means nothing). */
const EPILOGUE_MAX_BYTES = 64 * 1024;

/**
 * The pace between the request body and the parts' readers. It also ends the parser's input at the
 * form's close delimiter: the parser refuses any data after it ("Unexpected data after end of stream"),
 * yet the CRLF that closes a form, or an epilogue, may arrive as a read of its own. What follows the
 * delimiter is read and dropped, so the request is read to its end; more than EPILOGUE_MAX_BYTES is a 400.
 */
class Pace {
  private fed = 0;
  private consumed = 0;
  private waiting: (() => void) | null = null;
  private reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  private stopped = false;
  private readonly close: Uint8Array;
  /** The last bytes fed, one short of the close delimiter: a delimiter split between two reads is found. */
  private tail = new Uint8Array(0);

  constructor(
    private readonly body: ReadableStream<Uint8Array>,
    boundary: string,
  ) {
    this.close = new TextEncoder().encode(`\r\n--${boundary}--`);
  }

  /** The request body up to the form's close delimiter, read no further than READ_AHEAD_BYTES past what was consumed. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    this.reader = this.body.getReader();
    while (!this.stopped) {
      while (this.fed - this.consumed > READ_AHEAD_BYTES && !this.stopped) await new Promise<void>((resolve) => (this.waiting = resolve));
      if (this.stopped) return;
      const value = await this.read();
      if (value === null) return;
      this.fed += value.length;
      const end = this.closeEnd(value);
      if (end === -1) {
        yield value;
        continue;
      }
      yield value.subarray(0, end);
      await this.dropEpilogue(value.length - end);
      return;
    }
  }

  private async read(): Promise<Uint8Array | null> {
    const read = await this.reader!.read().catch((error) => {
      // Stopped while a read was pending: the parser's error is no longer anyone's.
      if (this.stopped) return { done: true as const, value: undefined };
      throw error;
    });
    return read.done ? null : read.value;
  }

  /** Where the close delimiter ends in `value` (it may have begun in the read before), or -1. */
  private closeEnd(value: Uint8Array): number {
    const keep = this.close.length - 1;
    // The tail holds less than a delimiter, so a delimiter found across the seam ends in `value`.
    const seam = joined(this.tail, value.subarray(0, keep));
    const inSeam = indexOf(seam, this.close);
    this.tail = value.length >= keep ? value.slice(value.length - keep) : joined(this.tail, value).slice(-keep);
    if (inSeam !== -1) return inSeam + this.close.length - (seam.length - Math.min(value.length, keep));
    const inValue = indexOf(value, this.close);
    return inValue === -1 ? -1 : inValue + this.close.length;
  }

  /** Reads what follows the close delimiter and drops it; more than EPILOGUE_MAX_BYTES is a 400. */
  private async dropEpilogue(already: number): Promise<void> {
    let dropped = already;
    while (!this.stopped) {
      if (dropped > EPILOGUE_MAX_BYTES) {
        throw new ValidationError(
          `The body is not a valid multipart/form-data message: more than ${EPILOGUE_MAX_BYTES} bytes follow its close delimiter`,
        );
      }
      const value = await this.read();
      if (value === null) return;
      dropped += value.length;
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

/** `a` then `b`, in a new array. */
function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const both = new Uint8Array(a.length + b.length);
  both.set(a);
  both.set(b, a.length);
  return both;
}

/** Where `needle` (not empty) first begins in `haystack`, or -1. */
function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  const first = needle[0]!;
  for (let at = haystack.indexOf(first); at !== -1 && at <= haystack.length - needle.length; at = haystack.indexOf(first, at + 1)) {
    let matched = 1;
    while (matched < needle.length && haystack[at + matched] === needle[matched]) matched++;
    if (matched === needle.length) return at;
  }
  return -1;
}

/** Reads a part whole, refusing it past `limit` bytes. */
async function readSmallPart(chunks: AsyncIterable<Uint8Array>, limit: number, name: string): Promise<string> {
  const text = await readBounded(chunks, limit, () => ValidationError.field(name, `must be at most ${limit} bytes`));
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
  // One part's buffer, filled again once R2 has stored what it held: a fresh one a part would leave
  // the parts before it for the collector, and the document's size in memory until it runs.
  const outgoing = new Uint8Array(PART_BYTES);
  let outgoingFilled = 0;
  const sendOutgoing = async () => {
    uploaded.push(await upload.uploadPart(uploaded.length + 1, outgoing.subarray(0, outgoingFilled)));
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
  const pace = new Pace(request.body, boundary);
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
