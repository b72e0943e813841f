import { utf8 } from "../crypto/encoding";
import { DOCUMENTS } from "../limits";

/*
 * A document's stored form (docs/documents.md, "Format"): its plaintext cut into chunks of
 * DOCUMENTS.chunkBytes (the last one shorter, or empty for an empty document), each sealed on its own
 * with AES-256-GCM under the document's data key and stored end to end, ciphertext and tag. The
 * nonce is the chunk's index (88 bits, big-endian) and a final-chunk byte (1 on the last chunk, 0
 * before), the STREAM construction: a chunk moved to another place, a stream cut at a chunk boundary,
 * or a chunk from another document (another key, and its id in the additional data) fails to open.
 */

const TAG_BYTES = 16;
const NONCE_BYTES = 12;
/** Stored bytes of every chunk but the last. */
export const SEALED_CHUNK_BYTES = DOCUMENTS.chunkBytes + TAG_BYTES;

/** A stored chunk that does not open: tampered with, moved, cut short, or another document's. */
export class DocumentIntegrityError extends Error {
  constructor(index: number) {
    super(`Chunk ${index} of the document failed authentication`);
  }
}

function nonceOf(index: number, final: boolean): Uint8Array {
  const nonce = new Uint8Array(NONCE_BYTES);
  const view = new DataView(nonce.buffer);
  // An index below 2^53 fits the 88 bits' low 64; the high 24 stay zero.
  view.setBigUint64(3, BigInt(index));
  nonce[NONCE_BYTES - 1] = final ? 1 : 0;
  return nonce;
}

/** The additional data of every chunk of one document. */
export const chunkContext = (tenantId: string, documentId: string) => utf8.encode(`documents/${tenantId}/${documentId}`);

/** A new document's data key: 32 random bytes, imported for sealing and opening its chunks. */
export function importDataKey(bytes: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", bytes, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
}

export async function sealChunk(key: CryptoKey, context: Uint8Array, index: number, final: boolean, plaintext: Uint8Array) {
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonceOf(index, final), additionalData: context }, key, plaintext);
  return new Uint8Array(sealed);
}

async function openChunk(key: CryptoKey, context: Uint8Array, index: number, final: boolean, sealed: Uint8Array) {
  try {
    const opened = await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonceOf(index, final), additionalData: context }, key, sealed);
    return new Uint8Array(opened);
  } catch {
    throw new DocumentIntegrityError(index);
  }
}

/** The chunks a stored object of `storedBytes` holds, the last of which is final. */
export function chunkCountOf(storedBytes: number): number {
  return Math.max(1, Math.ceil(storedBytes / SEALED_CHUNK_BYTES));
}

/**
 * Opens a stored object as it streams: one sealed chunk is buffered at a time, and only a chunk that
 * opened is passed on. The final flag is expected on the chunk the object's length makes last, so an
 * object cut at a chunk boundary fails there, as does one with a byte changed anywhere.
 */
export function openingStream(key: CryptoKey, context: Uint8Array, storedBytes: number): TransformStream<Uint8Array, Uint8Array> {
  const last = chunkCountOf(storedBytes) - 1;
  const buffer = new Uint8Array(SEALED_CHUNK_BYTES);
  let filled = 0;
  let index = 0;
  return new TransformStream({
    // A chunk that does not open errors the stream (controller.error, not a throw: a rejected
    // transform would also surface as an unhandled rejection).
    async transform(bytes, controller) {
      try {
        await take(bytes, controller);
      } catch (error) {
        controller.error(error);
      }
    },
    async flush(controller) {
      try {
        if (index !== last) throw new DocumentIntegrityError(index);
        controller.enqueue(await openChunk(key, context, index, true, buffer.slice(0, filled)));
      } catch (error) {
        controller.error(error);
      }
    },
  });

  async function take(bytes: Uint8Array, controller: TransformStreamDefaultController<Uint8Array>) {
    let offset = 0;
    while (offset < bytes.length) {
      const take = Math.min(SEALED_CHUNK_BYTES - filled, bytes.length - offset);
      // More bytes than the object's length: the last chunk is full and nothing may follow it.
      if (take === 0) throw new DocumentIntegrityError(index);
      buffer.set(bytes.subarray(offset, offset + take), filled);
      filled += take;
      offset += take;
      if (filled === SEALED_CHUNK_BYTES && index < last) {
        controller.enqueue(await openChunk(key, context, index, false, buffer.slice(0, filled)));
        index++;
        filled = 0;
      }
    }
  }
}
