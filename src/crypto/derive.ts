import { utf8 } from "./encoding";

/** The salt of every key the vault derives from a master key. */
const SALT = utf8.encode("token-vault/v1");

/** A master key's bytes, imported for HKDF only. */
export function importMasterKey(bytes: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", bytes, "HKDF", false, ["deriveBits"]);
}

/**
 * HKDF-SHA256 of the master key (or of a tenant's data-key material, for the session-nonce key):
 * `info` names what the bytes are for, so keys for different purposes are unrelated. Tenant keys use
 * `<purpose>/<tenant id>`; other purposes use names without a slash, so they never meet a tenant's.
 */
export async function deriveBytes(master: CryptoKey, info: string, length: number): Promise<Uint8Array> {
  const bits = await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: SALT, info: utf8.encode(info) }, master, length * 8);
  return new Uint8Array(bits);
}
