import { fromBase64Url, fromHex, toBase64Url, toHex } from "../crypto/encoding";
import type { TenantKeys } from "../crypto/tenant-keys";

/**
 * A session awaiting authorization is stored nowhere: its nonce carries what authorizing needs,
 * signed by the vault under the tenant's session-nonce key (src/crypto/tenant-keys.ts), so a
 * flood of POST /sessions costs no row and cannot crowd out anyone's session.
 *
 *   nonce   = base64url(content ‖ mac)                                         124 characters
 *   content = format (1 byte: 1) ‖ created_at (6 bytes, ms, big-endian) ‖ expires_at (6 bytes)
 *             ‖ the public application's id (16 bytes, its UUID) ‖ SHA-256 of the session key (32 bytes)
 *   mac     = HMAC-SHA256(tenant's session-nonce key, "session-nonce/<tenant id>/" ‖ content)
 *
 * The tenant is bound by the key and the MAC, not written: the authorizer's tenant is the only one
 * a nonce is checked in, and another tenant's nonce fails there like a forged one.
 */
export interface NonceClaims {
  /** The public application whose key created the session. */
  applicationId: string;
  createdAt: number;
  /** The end of the time to authorize, and the session's end unless its authorization sets another. */
  expiresAt: number;
  /** SHA-256 (hex) of the session key: what its api_keys row will hold. */
  keyHash: string;
}

const FORMAT = 1;
const TIME_BYTES = 6;
const UUID_BYTES = 16;
const HASH_BYTES = 32;
const MAC_BYTES = 32;
const CONTENT_BYTES = 1 + 2 * TIME_BYTES + UUID_BYTES + HASH_BYTES;
/** 93 bytes, a multiple of 3: every base64url character carries data, so one nonce has one spelling. */
const NONCE_PATTERN = new RegExp(`^[A-Za-z0-9_-]{${((CONTENT_BYTES + MAC_BYTES) / 3) * 4}}$`);

export async function signNonce(keys: TenantKeys, claims: NonceClaims): Promise<string> {
  const content = new Uint8Array(CONTENT_BYTES);
  const view = new DataView(content.buffer);
  content[0] = FORMAT;
  writeTime(view, 1, claims.createdAt);
  writeTime(view, 1 + TIME_BYTES, claims.expiresAt);
  content.set(uuidBytes(claims.applicationId), 1 + 2 * TIME_BYTES);
  content.set(fromHex(claims.keyHash), 1 + 2 * TIME_BYTES + UUID_BYTES);
  const nonce = new Uint8Array(CONTENT_BYTES + MAC_BYTES);
  nonce.set(content);
  nonce.set(await keys.signSessionNonce(content), CONTENT_BYTES);
  return toBase64Url(nonce);
}

/** The claims of a nonce this tenant's keys signed; null for anything else (malformed, altered, another tenant's). */
export async function openNonce(keys: TenantKeys, nonce: string): Promise<NonceClaims | null> {
  if (!NONCE_PATTERN.test(nonce)) return null;
  const bytes = fromBase64Url(nonce);
  const content = bytes.subarray(0, CONTENT_BYTES);
  if (content[0] !== FORMAT || !(await keys.verifiesSessionNonce(content, bytes.subarray(CONTENT_BYTES)))) return null;
  const view = new DataView(content.buffer, content.byteOffset, content.byteLength);
  return {
    createdAt: readTime(view, 1),
    expiresAt: readTime(view, 1 + TIME_BYTES),
    applicationId: uuidOf(content.subarray(1 + 2 * TIME_BYTES, 1 + 2 * TIME_BYTES + UUID_BYTES)),
    keyHash: toHex(content.subarray(1 + 2 * TIME_BYTES + UUID_BYTES)),
  };
}

/** Milliseconds since the epoch in 48 bits (enough until the year 10889). */
function writeTime(view: DataView, offset: number, ms: number): void {
  view.setUint16(offset, Math.floor(ms / 2 ** 32));
  view.setUint32(offset + 2, ms % 2 ** 32);
}

function readTime(view: DataView, offset: number): number {
  return view.getUint16(offset) * 2 ** 32 + view.getUint32(offset + 2);
}

/** Application ids are UUIDs (random, or the bootstrap's derived ones), written in lower case. */
function uuidBytes(id: string): Uint8Array {
  const hex = id.replace(/-/g, "");
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`Application id ${id} is not a UUID`);
  return fromHex(hex);
}

function uuidOf(bytes: Uint8Array): string {
  const hex = toHex(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
