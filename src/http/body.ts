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
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

/**
 * A request's body whole, refusing it past `limit` bytes (`tooLarge` makes the error). A body framed
 * by its Content-Length alone (no Transfer-Encoding beside it) is at most that long: HTTP's framing
 * (RFC 9112, section 6.3) ends it there, and the runtime reads no further. Such a body is read
 * natively in one call, which costs the isolate a fraction of counting chunks in JavaScript. Any other
 * body (chunked, or a Content-Length beside a Transfer-Encoding, which then does not frame it) is
 * counted as it streams (readBounded). The length is checked again once read, whatever the header said.
 */
export async function requestBodyWithin(request: Request, limit: number, tooLarge: () => Error): Promise<Uint8Array | null> {
  if (request.body === null) return null;
  const declared = request.headers.get("content-length");
  if (declared === null || request.headers.has("transfer-encoding") || !DECIMAL.test(declared)) {
    return readBounded(request.body, limit, tooLarge);
  }
  if (Number(declared) > limit) throw tooLarge();
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > limit) throw tooLarge();
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
