import { compactDecrypt, decodeProtectedHeader, type ProtectedHeaderParameters } from "jose";
import { jsonDepthOf, MAX_JSON_DEPTH, utf8TextOf } from "../http/body";

/*
 * Data a browser or app encrypted to one of the tenant's client encryption keys: a JWE in compact
 * serialization (RFC 7516) sent where plain data would be. Only ECDH-ES key agreement with an
 * X25519 key and A256GCM content encryption are opened: no key wrapping, no password-based or RSA
 * algorithm, no compression, so a JWE costs one key agreement and one decryption whatever it claims.
 */

export const KEY_MANAGEMENT_ALGORITHMS = ["ECDH-ES"];
export const CONTENT_ENCRYPTION_ALGORITHMS = ["A256GCM"];

/** Five base64url parts; the second (the encrypted key) is empty under direct key agreement. */
const COMPACT_JWE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/;

/**
 * The protected header of a value that reads as a JWE: a string of five base64url parts whose first
 * is a JSON object naming `alg` and `enc`. Anything else is plain data, however it looks.
 */
export function encryptedHeaderOf(value: unknown): ProtectedHeaderParameters | null {
  if (typeof value !== "string" || !COMPACT_JWE.test(value)) return null;
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(value);
  } catch {
    return null;
  }
  return typeof header.alg === "string" && typeof header.enc === "string" ? header : null;
}

/**
 * The algorithms are judged before the library sees the JWE (it checks them too): a JWE of any other
 * costs no key lookup, and a compressed one, which the library would inflate, is never opened.
 */
export function isOpenable(header: ProtectedHeaderParameters): boolean {
  return KEY_MANAGEMENT_ALGORITHMS.includes(header.alg!) && CONTENT_ENCRYPTION_ALGORITHMS.includes(header.enc!) && !("zip" in header);
}

export function isEncryptedData(value: unknown): boolean {
  return encryptedHeaderOf(value) !== null;
}

/**
 * The deepest a JWE's plaintext may nest: as deep as the data of a plain POST /tokens body can (the
 * body holds it one level down), so every walker of token data keeps the bound a body gives it.
 */
export const MAX_PLAINTEXT_DEPTH = MAX_JSON_DEPTH - 1;

/**
 * Where data is not opened (token updates, token intents), a value that reads as a JWE is refused
 * rather than stored as its ciphertext's text (docs/decisions.md, "Client encryption keys").
 */
export const JWE_NOT_OPENED_HERE =
  "is a JWE: encrypted data is accepted only by POST /tokens, POST /tokenize and a proxy call's encrypted header";

/** Why a JWE gave no data. */
export const JWE_REFUSALS = {
  unsupported: "is a JWE the vault does not open: only ECDH-ES key agreement with A256GCM, uncompressed",
  undecryptable: "is a JWE that does not decrypt with the client encryption key it names",
  notText: "is a JWE whose plaintext is not UTF-8 text",
  tooDeep: `is a JWE whose plaintext nests arrays and objects deeper than ${MAX_PLAINTEXT_DEPTH} levels`,
} as const;

/**
 * The plaintext of a JWE: the JSON value it holds, or the text itself when it is not JSON. A refusal
 * when it does not open with the key (a wrong key, a changed header, key, IV, ciphertext or tag, an
 * algorithm other than the two allowed), its plaintext is not text, or it nests deeper than data in a
 * plain body may (the body's own check never saw it).
 */
export async function decryptCompactJwe(jwe: string, privateKey: CryptoKey): Promise<{ data: unknown } | { refusal: string }> {
  let plaintext: Uint8Array;
  try {
    ({ plaintext } = await compactDecrypt(jwe, privateKey, {
      keyManagementAlgorithms: KEY_MANAGEMENT_ALGORITHMS,
      contentEncryptionAlgorithms: CONTENT_ENCRYPTION_ALGORITHMS,
    }));
  } catch {
    // Every failure here is the JWE's: only its bytes and the key are involved.
    return { refusal: JWE_REFUSALS.undecryptable };
  }
  const text = utf8TextOf(plaintext);
  if (text === null) return { refusal: JWE_REFUSALS.notText };
  if (jsonDepthOf(plaintext, MAX_PLAINTEXT_DEPTH) > MAX_PLAINTEXT_DEPTH) return { refusal: JWE_REFUSALS.tooDeep };
  try {
    return { data: JSON.parse(text) };
  } catch {
    return { data: text };
  }
}
