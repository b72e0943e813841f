/**
 * Apple Pay payment tokens of version EC_v1: the signature checked against Apple's root, then the
 * payment data decrypted with the merchant's payment processing key. ASN.1, CMS and X.509 are
 * pkijs's and asn1js's; the primitives are WebCrypto's.
 */
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { fromBase64, fromHex, toBase64, utf8 } from "../crypto/encoding";
import { APPLE_PAY } from "../limits";
import { APPLE_ROOT_CA_G3 } from "./apple-root";

/** The leaf that signs payment tokens carries this extension (Apple's payment token format). */
export const LEAF_OID = "1.2.840.113635.100.6.29";
/** The intermediate between the leaf and Apple Root CA - G3 carries this one. */
export const INTERMEDIATE_OID = "1.2.840.113635.100.6.2.14";
/** The merchant certificate's extension holding the merchant id's SHA-256, in hex. */
export const MERCHANT_ID_OID = "1.2.840.113635.100.6.32";
const SIGNING_TIME_OID = "1.2.840.113549.1.9.5";

export interface EcV1Token {
  version: "EC_v1";
  data: string;
  signature: string;
  header: { ephemeralPublicKey: string; publicKeyHash: string; transactionId: string; applicationData?: string };
}

/**
 * The clock the signing-time window is read against: Date.now. Published tokens were signed years
 * ago, so the tests, which run in the vault's isolate, move this clock (and only this one) to a
 * token's signing time; no configuration, binding or request can (docs/decisions.md, "Apple Pay").
 */
export const signingClock = { now: (): number => Date.now() };

/** Why a token was refused: said to the caller, and never about the key or the plaintext. */
export class TokenRefusal extends Error {}

/**
 * WebCrypto for pkijs, once per isolate (it holds no request's state). Its type lacks the Workers
 * extension `timingSafeEqual` of SubtleCrypto, which pkijs never calls.
 */
export const pkiEngine = new pkijs.CryptoEngine({ name: "webcrypto", crypto }) as unknown as pkijs.ICryptoEngine;

function asn1Of(der: Uint8Array, what: string): asn1js.AsnType {
  const parsed = asn1js.fromBER(der);
  if (parsed.offset === -1) throw new TokenRefusal(`${what} is not DER`);
  return parsed.result;
}

export function certificateOf(der: Uint8Array, what = "the certificate"): pkijs.Certificate {
  try {
    return new pkijs.Certificate({ schema: asn1Of(der, what) });
  } catch (error) {
    if (error instanceof TokenRefusal) throw error;
    throw new TokenRefusal(`${what} is not an X.509 certificate`);
  }
}

const hasExtension = (certificate: pkijs.Certificate, oid: string) => (certificate.extensions ?? []).some((e) => e.extnID === oid);

/** The merchant id's SHA-256 (party V of the key derivation), from the merchant certificate's extension. */
export function merchantIdHashOf(certificate: pkijs.Certificate): Uint8Array | null {
  const extension = (certificate.extensions ?? []).find((e) => e.extnID === MERCHANT_ID_OID);
  if (!extension) return null;
  const inner = asn1js.fromBER(extension.extnValue.valueBlock.valueHexView);
  const text = inner.offset === -1 ? null : (inner.result as asn1js.Utf8String).valueBlock?.value;
  if (typeof text !== "string" || !/^[0-9a-fA-F]{64}$/.test(text)) return null;
  return fromHex(text);
}

/** SHA-256 of the certificate's SubjectPublicKeyInfo, base64: what a token's `publicKeyHash` names. */
export async function publicKeyHashOf(certificate: pkijs.Certificate): Promise<string> {
  const spki = certificate.subjectPublicKeyInfo.toSchema().toBER(false);
  return toBase64(new Uint8Array(await crypto.subtle.digest("SHA-256", spki)));
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function decoded(text: string, what: string, decode: (t: string) => Uint8Array): Uint8Array {
  try {
    return decode(text);
  } catch {
    throw new TokenRefusal(`${what} is not well encoded`);
  }
}

/**
 * Checks the token's detached CMS signature: over ephemeralPublicKey || data || transactionId ||
 * applicationData, by a leaf with LEAF_OID under an intermediate with INTERMEDIATE_OID under
 * Apple Root CA - G3, each valid at the signing time, which lies within APPLE_PAY.signingWindow of now.
 */
export async function verifySignature(token: EcV1Token, now: number): Promise<void> {
  const signed = concat(
    decoded(token.header.ephemeralPublicKey, "header.ephemeralPublicKey", fromBase64),
    decoded(token.data, "data", fromBase64),
    decoded(token.header.transactionId, "header.transactionId", fromHex),
    token.header.applicationData ? decoded(token.header.applicationData, "header.applicationData", fromHex) : new Uint8Array(),
  );
  let signedData: pkijs.SignedData;
  try {
    const info = new pkijs.ContentInfo({ schema: asn1Of(decoded(token.signature, "signature", fromBase64), "signature") });
    if (info.contentType !== pkijs.ContentInfo.SIGNED_DATA) throw new TokenRefusal("signature is not CMS SignedData");
    signedData = new pkijs.SignedData({ schema: info.content });
  } catch (error) {
    if (error instanceof TokenRefusal) throw error;
    throw new TokenRefusal("signature is not CMS SignedData");
  }
  if (signedData.signerInfos.length !== 1) throw new TokenRefusal("signature must have exactly one signer");
  // Apple's signature carries its leaf and intermediate; more would make chain building search among them.
  if ((signedData.certificates?.length ?? 0) > APPLE_PAY.maxSignatureCertificates) {
    throw new TokenRefusal(`signature carries more than ${APPLE_PAY.maxSignatureCertificates} certificates`);
  }
  const signingTime = signingTimeOf(signedData.signerInfos[0]!);
  if (signingTime < now - APPLE_PAY.signingWindowPastMs || signingTime > now + APPLE_PAY.signingWindowFutureMs) {
    throw new TokenRefusal("signature's signing time is outside the accepted window");
  }
  const root = certificateOf(APPLE_ROOT_CA_G3, "Apple Root CA - G3");
  let result: pkijs.SignedDataVerifyResult;
  try {
    result = await signedData.verify(
      { signer: 0, data: signed.buffer, trustedCerts: [root], checkChain: true, checkDate: new Date(signingTime), extendedMode: true },
      pkiEngine,
    );
  } catch {
    throw new TokenRefusal("signature does not verify under Apple Root CA - G3");
  }
  const path = result.certificatePath ?? [];
  const leaf = result.signerCertificate;
  if (!result.signatureVerified || !leaf || path.length !== 3) throw new TokenRefusal("signature does not verify under Apple Root CA - G3");
  if (!hasExtension(leaf, LEAF_OID)) throw new TokenRefusal("signature's leaf certificate is not Apple's payment token signer");
  const intermediate = path.find((c) => c !== leaf && !c.issuer.isEqual(c.subject));
  if (!intermediate || !hasExtension(intermediate, INTERMEDIATE_OID)) {
    throw new TokenRefusal("signature's intermediate certificate is not Apple's");
  }
}

function signingTimeOf(signer: pkijs.SignerInfo): number {
  const attribute = signer.signedAttrs?.attributes.find((a) => a.type === SIGNING_TIME_OID);
  const value = attribute?.values[0] as asn1js.UTCTime | asn1js.GeneralizedTime | undefined;
  if (!value || typeof value.toDate !== "function") throw new TokenRefusal("signature has no signing time");
  return value.toDate().getTime();
}

/**
 * The symmetric key: ECDH of the ephemeral public key and the merchant's private key, through
 * NIST SP 800-56A's single-step KDF with SHA-256 (counter 1, algorithm id "\x0did-aes256-GCM",
 * party U "Apple", party V the merchant id's SHA-256).
 */
async function symmetricKeyOf(token: EcV1Token, privateKey: CryptoKey, merchantIdHash: Uint8Array): Promise<CryptoKey> {
  let ephemeral: CryptoKey;
  try {
    ephemeral = await crypto.subtle.importKey(
      "spki",
      decoded(token.header.ephemeralPublicKey, "header.ephemeralPublicKey", fromBase64),
      { name: "ECDH", namedCurve: "P-256" },
      false,
      [],
    );
  } catch (error) {
    if (error instanceof TokenRefusal) throw error;
    throw new TokenRefusal("header.ephemeralPublicKey is not a P-256 public key");
  }
  // The Workers types name the member `$public`; WebCrypto (and workerd) read `public`.
  const ecdh = { name: "ECDH", public: ephemeral } as unknown as SubtleCryptoDeriveKeyAlgorithm;
  const shared = new Uint8Array(await crypto.subtle.deriveBits(ecdh, privateKey, 256));
  const otherInfo = concat(utf8.encode("\x0did-aes256-GCM"), utf8.encode("Apple"), merchantIdHash);
  const digest = await crypto.subtle.digest("SHA-256", concat(new Uint8Array([0, 0, 0, 1]), shared, otherInfo));
  return crypto.subtle.importKey("raw", digest, "AES-GCM", false, ["decrypt"]);
}

/** The payment data, decrypted (AES-256-GCM, a zero IV of 16 bytes) and read as JSON. */
export async function decryptPaymentData(token: EcV1Token, privateKey: CryptoKey, merchantIdHash: Uint8Array): Promise<unknown> {
  const key = await symmetricKeyOf(token, privateKey, merchantIdHash);
  let plaintext: ArrayBuffer;
  try {
    plaintext = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: new Uint8Array(16), tagLength: 128 },
      key,
      decoded(token.data, "data", fromBase64) as Uint8Array<ArrayBuffer>,
    );
  } catch (error) {
    if (error instanceof TokenRefusal) throw error;
    throw new TokenRefusal("data does not decrypt with the merchant's payment processing key");
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(plaintext));
  } catch {
    throw new TokenRefusal("data does not decrypt to JSON");
  }
}
