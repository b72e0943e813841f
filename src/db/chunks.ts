/**
 * How much one statement's JSON parameter carries. The audit log's writes insert many entries from one
 * JSON parameter (src/audit/storage.ts), and D1 refuses any value over 2 MB (SQLITE_TOOBIG): under load
 * one queue batch carries megabytes of a tenant's entries (100 messages of up to 100 KB). So such
 * writes are cut into chunks of at most CHUNK_BYTES and CHUNK_ROWS. The statements' own text is a few
 * hundred bytes (D1 allows 100 KB) and binds few parameters (D1 allows 100).
 *
 * 512 KB is a quarter of D1's 2 MB: sizes are counted before the writer adds what it computes last
 * (an audit entry's seq and hash, counted at their longest), and the margin leaves room for that count
 * being off without a retry ever failing the same way. It is large enough that a full audit queue
 * batch of one tenant is about 20 chunks, each two round trips. 1,000 rows bounds a chunk of small
 * entries too: the ids checked against the log, the HMACs computed before the write, and what a
 * writer that lost the race for the head computes again.
 */
export const CHUNK_BYTES = 512 * 1024;
export const CHUNK_ROWS = 1_000;

const utf8 = new TextEncoder();

/** Only characters of one UTF-8 byte each: no 0x80-0xFFFF code unit (a surrogate pair's halves included). */
const ASCII = /^[\0-\x7f]*$/;

/**
 * What a JSON text takes in a statement's parameter, in bytes: a message in another script takes up
 * to 3 a character. Audit entries are mostly ASCII, whose length is their size: the test is native
 * and allocates nothing, where encoding each entry to measure it made a buffer per entry.
 */
export function jsonBytes(json: string): number {
  return ASCII.test(json) ? json.length : utf8.encode(json).length;
}

/** How much one chunk may hold: items, and bytes as `bytesOf` counts them. */
export interface ChunkLimits {
  rows: number;
  bytes: number;
}

const D1_VALUE: ChunkLimits = { rows: CHUNK_ROWS, bytes: CHUNK_BYTES };

/** The items in order, in chunks within `limits` (a statement's parameter by default); an item larger than the byte limit is a chunk of its own. */
export function* chunked<T>(items: readonly T[], bytesOf: (item: T) => number, limits: ChunkLimits = D1_VALUE): Generator<T[]> {
  for (const { items: chunk } of sizedChunks(items, bytesOf, limits)) yield chunk;
}

/** chunked, with each chunk's bytes as `bytesOf` counts them. */
export function* sizedChunks<T>(
  items: readonly T[],
  bytesOf: (item: T) => number,
  limits: ChunkLimits,
): Generator<{ items: T[]; bytes: number }> {
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = bytesOf(item);
    if (isFull(chunk.length, bytes, size, limits)) {
      yield { items: chunk, bytes };
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) yield { items: chunk, bytes };
}

/** The longest prefix of `items` that fits in a chunk already holding `used`: at least the first item of an empty chunk. */
export function fitting<T>(items: readonly T[], bytesOf: (item: T) => number, used: { rows: number; bytes: number }): T[] {
  const taken: T[] = [];
  let { rows, bytes } = used;
  for (const item of items) {
    const size = bytesOf(item);
    if (isFull(rows, bytes, size, D1_VALUE)) break;
    taken.push(item);
    rows += 1;
    bytes += size;
  }
  return taken;
}

function isFull(rows: number, bytes: number, next: number, limits: ChunkLimits): boolean {
  return rows > 0 && (rows >= limits.rows || bytes + next > limits.bytes);
}
