import { ValidationError } from "../errors";
import { BODY } from "../limits";

/**
 * What every JSON body the vault reads must satisfy before anything looks inside it: valid UTF-8
 * (a vault must not silently replace bytes it was given) and at most MAX_JSON_DEPTH levels of
 * arrays and objects (every walker of a body may then recurse without running out of stack).
 */
export const MAX_JSON_DEPTH = BODY.maxJsonDepth;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The bytes as text, or null when they are not UTF-8. */
export function utf8TextOf(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * A stream's bytes read whole, refusing it past `limit` bytes: `tooLarge` makes the error, thrown as
 * soon as the count passes (the stream is then cancelled, so no more of it is read).
 */
export async function readBounded(chunks: AsyncIterable<Uint8Array>, limit: number, tooLarge: () => Error): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    length += chunk.byteLength;
    if (length > limit) throw tooLarge();
    parts.push(chunk);
  }
  return concatenated(parts, length);
}

/**
 * A request's body whole, refusing it past `limit` bytes (`tooLarge` makes the error). A body framed
 * by its Content-Length alone (no Transfer-Encoding beside it) is at most that long when it came over
 * HTTP (RFC 9112, section 6.3), but not when it was handed over in-process (a service binding's
 * request with a stream and any header). Such a body is read natively (readAtLeast), up to its
 * declared length and one byte more, in reads of at most FRAMED_READ bytes: a body of a few KB is one
 * read, which costs the isolate a fraction of counting chunks in JavaScript, and no read allocates
 * much ahead of what arrived. The extra byte arriving means the body runs past its length: the rest
 * is counted as it streams (readBounded), as any other body is (chunked, or a Content-Length beside a
 * Transfer-Encoding, which then does not frame it), so nothing past `limit` is ever held.
 */
export async function requestBodyWithin(request: Request, limit: number, tooLarge: () => Error): Promise<Uint8Array | null> {
  if (request.body === null) return null;
  const declared = request.headers.get("content-length");
  if (declared === null || request.headers.has("transfer-encoding") || !DECIMAL.test(declared)) {
    return readBounded(request.body, limit, tooLarge);
  }
  const length = Number(declared);
  if (length > limit) throw tooLarge();
  let reader: ReadableStreamBYOBReader;
  try {
    reader = request.body.getReader({ mode: "byob" });
  } catch {
    // A stream of JavaScript chunks, not bytes (a Request built in-process): counted as it streams.
    return readBounded(request.body, limit, tooLarge);
  }
  const parts: Uint8Array[] = [];
  let read = 0;
  for (;;) {
    const wanted = Math.min(length + 1 - read, FRAMED_READ);
    // Resolves once `wanted` bytes are read, or with fewer when the body ends.
    const { value } = await reader.readAtLeast(wanted, new Uint8Array(wanted));
    const got = value?.byteLength ?? 0;
    if (got > 0) parts.push(value as Uint8Array);
    read += got;
    if (read > length) {
      // The body runs past its length (handed over in-process): the rest is counted as it streams.
      if (read > limit) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      reader.releaseLock();
      const rest = await readBounded(request.body, limit - read, tooLarge);
      return concatenated([...parts, rest], read + rest.byteLength);
    }
    if (got < wanted) break;
  }
  // The stream has ended and nobody reads it again, so the reader keeps its lock: releasing it
  // rejects the reader's `closed` with a new TypeError, which costs the isolate about 5 µs a call
  // (bench/lib/profile.mjs, no transform).
  return parts.length === 1 ? parts[0]! : concatenated(parts, read);
}

/** The most a read of a body framed by its length asks for (and allocates) at once. */
const FRAMED_READ = 64 * 1024;

/** The parts one after another, in one array of `length` bytes (their sum). */
function concatenated(parts: Uint8Array[], length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

const DECIMAL = /^\d{1,16}$/;

/**
 * The deepest nesting of arrays and objects in JSON text, found by one scan that skips strings;
 * it stops counting past `limit`. Text that is not JSON gets some number: the parser judges it.
 */
export function jsonDepthOf(bytes: Uint8Array, limit: number = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return deepest;
}

export function tooDeepError(): ValidationError {
  return ValidationError.field("body", `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
}

/** A 400 unless the bytes are UTF-8 and, for a JSON media type, nested no deeper than the bound. */
export function checkBodyText(bytes: Uint8Array, mediaType: string): void {
  if (utf8TextOf(bytes) === null) throw ValidationError.field("body", "must be valid UTF-8");
  if (mediaType.endsWith("json") && jsonDepthOf(bytes) > MAX_JSON_DEPTH) throw tooDeepError();
}
