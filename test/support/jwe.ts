/*
 * A JWE builder of the test's own (RFC 7516 compact serialization, RFC 7518 ECDH-ES with the Concat
 * KDF, A256GCM) on WebCrypto alone: the vault opens JWEs with `jose`, so a JWE made here shows that
 * another implementation's output is accepted, not only the vault's own library's.
 */

const encoder = new TextEncoder();

export function base64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function lengthPrefixed(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + bytes.length);
  new DataView(out.buffer).setUint32(0, bytes.length);
  out.set(bytes, 4);
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** The raw 32-byte X25519 public key between the PEM markers the vault answers. */
export function rawPublicKeyOf(pem: string): Uint8Array {
  const body = pem.replace("-----BEGIN PUBLIC KEY-----", "").replace("-----END PUBLIC KEY-----", "").replaceAll(/\s/g, "");
  return Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
}

/** The Concat KDF of RFC 7518 §4.6.2 for direct key agreement: one SHA-256 round gives the 256-bit content key. */
async function concatKdf(z: Uint8Array, enc: string): Promise<Uint8Array> {
  const otherInfo = concat(
    lengthPrefixed(encoder.encode(enc)),
    lengthPrefixed(new Uint8Array()),
    lengthPrefixed(new Uint8Array()),
    Uint8Array.of(0, 0, 1, 0),
  );
  return new Uint8Array(await crypto.subtle.digest("SHA-256", concat(Uint8Array.of(0, 0, 0, 1), z, otherInfo)));
}

/** Encrypts `plaintext` to the X25519 public key: ECDH-ES, A256GCM; `header` adds to or replaces the protected header's members. */
export async function encryptJwe(
  publicKeyPem: string,
  kid: string,
  plaintext: string,
  header: Record<string, unknown> = {},
): Promise<string> {
  const recipient = await crypto.subtle.importKey("raw", rawPublicKeyOf(publicKeyPem), { name: "X25519" }, true, []);
  const ephemeral = (await crypto.subtle.generateKey({ name: "X25519" }, true, ["deriveBits"])) as CryptoKeyPair;
  const z = new Uint8Array(
    await crypto.subtle.deriveBits(
      { name: "X25519", public: recipient } as unknown as SubtleCryptoDeriveKeyAlgorithm,
      ephemeral.privateKey,
      256,
    ),
  );
  const epk = new Uint8Array((await crypto.subtle.exportKey("raw", ephemeral.publicKey)) as ArrayBuffer);
  const protectedHeader = {
    alg: "ECDH-ES",
    enc: "A256GCM",
    kid,
    epk: { kty: "OKP", crv: "X25519", x: base64Url(epk) },
    ...header,
  };
  const encodedHeader = base64Url(encoder.encode(JSON.stringify(protectedHeader)));
  const key = await crypto.subtle.importKey("raw", await concatKdf(z, "A256GCM"), "AES-GCM", false, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: encoder.encode(encodedHeader), tagLength: 128 },
      key,
      encoder.encode(plaintext),
    ),
  );
  const ciphertext = sealed.slice(0, -16);
  const tag = sealed.slice(-16);
  return [encodedHeader, "", base64Url(iv), base64Url(ciphertext), base64Url(tag)].join(".");
}

/** The JWE with one character of part `index` (0 header … 4 tag) changed. */
export function tamper(jwe: string, index: number): string {
  const parts = jwe.split(".");
  const part = parts[index]!;
  const at = Math.floor(part.length / 2);
  parts[index] = `${part.slice(0, at)}${part[at] === "A" ? "B" : "A"}${part.slice(at + 1)}`;
  return parts.join(".");
}
