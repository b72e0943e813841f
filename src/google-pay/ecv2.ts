/**
 * Google Pay's ECv2 payment method token, opened with WebCrypto primitives: the signature chain
 * (Google's root signing key → the intermediate signing key → the signed message, with the
 * recipient's id in what is signed), then ECIES-v1 (ECDH P-256, HKDF-SHA256, HMAC-SHA256,
 * AES-256-CTR with a zero IV). Every failure is an EcV2Refusal naming a stable code; nothing here
 * reads or writes storage.
 */
import { fromBase64, fromUtf8, utf8 } from "../crypto/encoding";

/** Why a token was refused: the codes docs/api.md lists for POST /google-pay. */
export type EcV2RefusalCode =
  | "malformed_token"
  | "unsupported_protocol_version"
  | "no_root_signing_key"
  | "intermediate_signature_invalid"
  | "intermediate_key_expired"
  | "signature_invalid"
  | "decryption_failed"
  | "message_expired";

export class EcV2Refusal extends Error {
  constructor(
    readonly code: EcV2RefusalCode,
    message: string,
  ) {
    super(message);
  }
}

/** One of Google's root signing keys, as Google publishes them (`keyValue`: base64 SubjectPublicKeyInfo). */
export interface RootSigningKey {
  keyValue: string;
  protocolVersion: string;
  /** Milliseconds since the epoch, as a decimal string; ECv2 keys without one are not trusted. */
  keyExpiration?: string;
}

export interface EcV2Token {
  protocolVersion: string;
  signature: string;
  intermediateSigningKey: { signedKey: string; signatures: string[] };
  signedMessage: string;
}

export interface EcV2Recipient {
  /** What Google signed the message for: `merchant:<merchant id>` for a merchant that decrypts its own tokens. */
  recipientId: string;
  /** The merchant's private keys (ECDH P-256); each is tried in turn, as during a key rotation. */
  privateKeys: CryptoKey[];
  rootKeys: RootSigningKey[];
  now: number;
}

const SENDER_ID = "Google";
const PROTOCOL_VERSION = "ECv2";
const ECDSA = { name: "ECDSA", namedCurve: "P-256" } as const;
const HKDF_INFO = utf8.encode("Google");

/** `length (4 bytes, little-endian) || bytes` for each part: the byte string Google signs. */
function lengthValue(...parts: string[]): Uint8Array<ArrayBuffer> {
  const encoded = parts.map((part) => utf8.encode(part));
  const out = new Uint8Array(encoded.reduce((sum, part) => sum + 4 + part.length, 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const part of encoded) {
    view.setUint32(offset, part.length, true);
    out.set(part, offset + 4);
    offset += 4 + part.length;
  }
  return out;
}

function base64Bytes(value: unknown, what: string): Uint8Array<ArrayBuffer> {
  if (typeof value !== "string") throw new EcV2Refusal("malformed_token", `${what} is not a base64 string`);
  try {
    return fromBase64(value) as Uint8Array<ArrayBuffer>;
  } catch {
    throw new EcV2Refusal("malformed_token", `${what} is not valid base64`);
  }
}

function jsonObject(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EcV2Refusal("malformed_token", `${what} is not JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new EcV2Refusal("malformed_token", `${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** A time in milliseconds since the epoch, written as a decimal string. */
function millisecondsOf(value: unknown, what: string): number {
  if (typeof value !== "string" || !/^\d{1,15}$/.test(value))
    throw new EcV2Refusal("malformed_token", `${what} is not a time in milliseconds`);
  return Number(value);
}

/**
 * An ASN.1 DER ECDSA signature (SEQUENCE of INTEGER r, INTEGER s) as the 64 bytes r || s WebCrypto
 * verifies; null when it is not exactly that (so it verifies nothing).
 */
function derToRawSignature(der: Uint8Array): Uint8Array<ArrayBuffer> | null {
  if (der.length < 8 || der[0] !== 0x30 || der[1] !== der.length - 2) return null;
  const raw = new Uint8Array(64);
  let offset = 2;
  for (const half of [0, 32]) {
    if (der[offset] !== 0x02) return null;
    const length = der[offset + 1]!;
    let start = offset + 2;
    const end = start + length;
    if (length === 0 || length > 33 || end > der.length) return null;
    while (end - start > 32) {
      if (der[start] !== 0) return null;
      start++;
    }
    raw.set(der.subarray(start, end), half + 32 - (end - start));
    offset = end;
  }
  return offset === der.length ? raw : null;
}

async function verifiesWithAny(keys: CryptoKey[], signatures: Uint8Array[], message: Uint8Array<ArrayBuffer>): Promise<boolean> {
  for (const signature of signatures) {
    const raw = derToRawSignature(signature);
    if (!raw) continue;
    for (const key of keys) {
      if (await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, raw, message)) return true;
    }
  }
  return false;
}

async function importVerifyingKey(spki: Uint8Array<ArrayBuffer>): Promise<CryptoKey | null> {
  try {
    return await crypto.subtle.importKey("spki", spki, ECDSA, false, ["verify"]);
  } catch {
    return null;
  }
}

/** The ECv2 root keys still in force at `now`: an ECv2 key must state its expiry. */
async function trustedRootKeys(rootKeys: RootSigningKey[], now: number): Promise<CryptoKey[]> {
  const trusted: CryptoKey[] = [];
  for (const root of rootKeys) {
    if (root.protocolVersion !== PROTOCOL_VERSION || root.keyExpiration === undefined) continue;
    if (!/^\d{1,15}$/.test(root.keyExpiration) || Number(root.keyExpiration) <= now) continue;
    let spki: Uint8Array<ArrayBuffer>;
    try {
      spki = fromBase64(root.keyValue) as Uint8Array<ArrayBuffer>;
    } catch {
      continue;
    }
    const key = await importVerifyingKey(spki);
    if (key) trusted.push(key);
  }
  return trusted;
}

/** The intermediate signing key, once a root key's signature over it verifies and it has not expired. */
async function intermediateKeyOf(token: EcV2Token, recipient: EcV2Recipient): Promise<CryptoKey> {
  const roots = await trustedRootKeys(recipient.rootKeys, recipient.now);
  if (roots.length === 0) throw new EcV2Refusal("no_root_signing_key", "no Google root signing key for ECv2 is in force");
  const { signedKey, signatures } = token.intermediateSigningKey;
  const signed = lengthValue(SENDER_ID, PROTOCOL_VERSION, signedKey);
  const decoded = signatures.map((signature, index) => base64Bytes(signature, `intermediateSigningKey.signatures[${index}]`));
  if (!(await verifiesWithAny(roots, decoded, signed))) {
    throw new EcV2Refusal("intermediate_signature_invalid", "the intermediate signing key is not signed by a Google root signing key");
  }
  const key = jsonObject(signedKey, "intermediateSigningKey.signedKey");
  if (millisecondsOf(key.keyExpiration, "intermediateSigningKey.signedKey.keyExpiration") <= recipient.now) {
    throw new EcV2Refusal("intermediate_key_expired", "the intermediate signing key has expired");
  }
  const intermediate = await importVerifyingKey(base64Bytes(key.keyValue, "intermediateSigningKey.signedKey.keyValue"));
  if (!intermediate) throw new EcV2Refusal("malformed_token", "intermediateSigningKey.signedKey.keyValue is not a P-256 public key");
  return intermediate;
}

async function hmacTagMatches(macKey: Uint8Array<ArrayBuffer>, tag: Uint8Array<ArrayBuffer>, ciphertext: Uint8Array<ArrayBuffer>) {
  const key = await crypto.subtle.importKey("raw", macKey, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  // crypto.subtle.verify compares the tag in constant time.
  return crypto.subtle.verify("HMAC", key, tag, ciphertext);
}

/** ECIES-v1 with one private key: the plaintext, or null when the tag does not match (another key's message). */
async function decryptWith(
  privateKey: CryptoKey,
  ephemeralPublicKey: CryptoKey,
  ephemeralBytes: Uint8Array<ArrayBuffer>,
  tag: Uint8Array<ArrayBuffer>,
  ciphertext: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array | null> {
  // WebCrypto names the peer key `public`; the Workers types spell that member `$public`.
  const ecdh = { name: "ECDH", public: ephemeralPublicKey } as unknown as SubtleCryptoDeriveKeyAlgorithm;
  const shared = new Uint8Array(await crypto.subtle.deriveBits(ecdh, privateKey, 256));
  const ikm = new Uint8Array(ephemeralBytes.length + shared.length);
  ikm.set(ephemeralBytes);
  ikm.set(shared, ephemeralBytes.length);
  const hkdfKey = await crypto.subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
  const derived = new Uint8Array(
    await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: HKDF_INFO }, hkdfKey, 512),
  );
  if (!(await hmacTagMatches(derived.slice(32), tag, ciphertext))) return null;
  const aesKey = await crypto.subtle.importKey("raw", derived.slice(0, 32), "AES-CTR", false, ["decrypt"]);
  return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-CTR", counter: new Uint8Array(16), length: 128 }, aesKey, ciphertext));
}

/**
 * Verifies the token's signature chain for the recipient and decrypts its message: the plaintext
 * (for a payment, Google's JSON message; its expiry is the caller's to check, see messageOf).
 */
export async function unsealEcV2(token: EcV2Token, recipient: EcV2Recipient): Promise<string> {
  if (token.protocolVersion !== PROTOCOL_VERSION) {
    throw new EcV2Refusal("unsupported_protocol_version", `protocolVersion must be ECv2, not ${JSON.stringify(token.protocolVersion)}`);
  }
  const intermediate = await intermediateKeyOf(token, recipient);
  const signed = lengthValue(SENDER_ID, recipient.recipientId, PROTOCOL_VERSION, token.signedMessage);
  if (!(await verifiesWithAny([intermediate], [base64Bytes(token.signature, "signature")], signed))) {
    throw new EcV2Refusal("signature_invalid", "the signature does not verify for this merchant's recipient id");
  }
  const message = jsonObject(token.signedMessage, "signedMessage");
  const ciphertext = base64Bytes(message.encryptedMessage, "signedMessage.encryptedMessage");
  const tag = base64Bytes(message.tag, "signedMessage.tag");
  const ephemeralBytes = base64Bytes(message.ephemeralPublicKey, "signedMessage.ephemeralPublicKey");
  let ephemeralPublicKey: CryptoKey;
  try {
    ephemeralPublicKey = await crypto.subtle.importKey("raw", ephemeralBytes, { name: "ECDH", namedCurve: "P-256" }, false, []);
  } catch {
    throw new EcV2Refusal("malformed_token", "signedMessage.ephemeralPublicKey is not an uncompressed P-256 point");
  }
  for (const privateKey of recipient.privateKeys) {
    const plaintext = await decryptWith(privateKey, ephemeralPublicKey, ephemeralBytes, tag, ciphertext);
    if (plaintext) return fromUtf8.decode(plaintext);
  }
  throw new EcV2Refusal("decryption_failed", "the message's tag does not match under any of the merchant's private keys");
}

/** Google's decrypted payment message, once its `messageExpiration` is checked against `now`. */
export function messageOf(plaintext: string, now: number): Record<string, unknown> {
  const message = jsonObject(plaintext, "the decrypted message");
  if (millisecondsOf(message.messageExpiration, "messageExpiration") <= now) {
    throw new EcV2Refusal("message_expired", "the payment message has expired");
  }
  return message;
}
