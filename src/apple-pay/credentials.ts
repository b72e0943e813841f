/**
 * A payment processing certificate and its private key, as a merchant uploads them: read, and held
 * to what decryption needs (an EC P-256 key that is the certificate's, a merchant id extension).
 */
import type * as pkijs from "pkijs";
import { fromBase64, toBase64, toHex } from "../crypto/encoding";
import { ValidationError } from "../errors";
import { certificateOf, merchantIdHashOf, publicKeyHashOf, TokenRefusal } from "./ec-v1";
import { readPkcs12 } from "./pkcs12";

const FIELD = "payment_processor_certificate_data";
const EC_P256 = { name: "ECDH", namedCurve: "P-256" } as const;

export interface ProcessingCredentials {
  certificate: pkijs.Certificate;
  /** The certificate, DER. */
  der: Uint8Array;
  /** The private key, PKCS #8 DER. */
  pkcs8: Uint8Array;
  publicKeyHash: string;
  fingerprint: string;
  expiresAt: number;
}

const refuse = (message: string) => ValidationError.field(FIELD, message);

/** The blocks of PEM text, by label. */
function pemBlocks(text: string): Map<string, Uint8Array> {
  const blocks = new Map<string, Uint8Array>();
  for (const [, label, body] of text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)) {
    if (blocks.has(label!)) throw refuse(`holds more than one ${label}`);
    try {
      blocks.set(label!, fromBase64(body!.replace(/\s+/g, "")));
    } catch {
      throw refuse(`holds a ${label} that is not base64`);
    }
  }
  return blocks;
}

async function pieces(data: Uint8Array, password: string): Promise<{ der: Uint8Array; pkcs8: Uint8Array }> {
  const text = new TextDecoder().decode(data);
  if (!text.includes("-----BEGIN")) return await readPkcs12(data, password, refuse);
  const blocks = pemBlocks(text);
  const der = blocks.get("CERTIFICATE");
  const pkcs8 = blocks.get("PRIVATE KEY");
  if (!der) throw refuse("holds no CERTIFICATE");
  if (!pkcs8) throw refuse("holds no PRIVATE KEY (PKCS #8, unencrypted)");
  return { der, pkcs8 };
}

/** The JWK coordinates of a public key, to compare two keys. */
async function pointOf(key: CryptoKey): Promise<string> {
  const jwk = (await crypto.subtle.exportKey("jwk", key)) as JsonWebKey;
  return `${jwk.x}.${jwk.y}`;
}

export async function readCredentials(dataBase64: string, password: string): Promise<ProcessingCredentials> {
  const { der, pkcs8 } = await pieces(fromBase64(dataBase64), password);
  let certificate: pkijs.Certificate;
  try {
    certificate = certificateOf(der);
  } catch (error) {
    throw refuse(error instanceof TokenRefusal ? error.message : "holds no X.509 certificate");
  }
  if (!merchantIdHashOf(certificate)) throw refuse("holds a certificate without Apple's merchant id extension (1.2.840.113635.100.6.32)");
  let privateKey: CryptoKey;
  let publicKey: CryptoKey;
  try {
    privateKey = await crypto.subtle.importKey("pkcs8", pkcs8 as Uint8Array<ArrayBuffer>, EC_P256, true, ["deriveBits"]);
  } catch {
    throw refuse("holds a private key that is not EC P-256 (PKCS #8)");
  }
  try {
    const spki = certificate.subjectPublicKeyInfo.toSchema().toBER(false);
    publicKey = await crypto.subtle.importKey("spki", spki, EC_P256, true, []);
  } catch {
    throw refuse("holds a certificate whose key is not EC P-256");
  }
  if ((await pointOf(privateKey)) !== (await pointOf(publicKey))) throw refuse("holds a private key that is not the certificate's");
  return {
    certificate,
    der,
    pkcs8,
    publicKeyHash: await publicKeyHashOf(certificate),
    fingerprint: toHex(await crypto.subtle.digest("SHA-256", der as Uint8Array<ArrayBuffer>)),
    expiresAt: certificate.notAfter.value.getTime(),
  };
}

export const certificateText = (der: Uint8Array) => toBase64(der);
