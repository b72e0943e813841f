/**
 * A PKCS #12 file's certificate and private key, read with pkijs: password-based encryption of
 * PBES2 (PBKDF2 with AES-CBC, OpenSSL 3's default), its integrity MAC checked. The legacy ciphers
 * (3DES, RC2) have no WebCrypto implementation: such a file is refused, and PEM is the way in.
 */
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { utf8 } from "../crypto/encoding";
import type { ValidationError } from "../errors";
import { APPLE_PAY } from "../limits";
import { pkiEngine } from "./ec-v1";

const CERT_BAG = "1.2.840.113549.1.12.10.1.3";
const KEY_BAG = "1.2.840.113549.1.12.10.1.1";
const SHROUDED_KEY_BAG = "1.2.840.113549.1.12.10.1.2";
const X509_CERTIFICATE = "1.2.840.113549.1.9.22.1";
const DATA = "1.2.840.113549.1.7.1";
const ENCRYPTED_DATA = "1.2.840.113549.1.7.6";

/**
 * One part of the file's authenticated safe, decrypted when it is encrypted. Awaited here rather
 * than through AuthenticatedSafe.parseInternalValues, whose EncryptedData.decrypt hands a refusal
 * on unawaited (Workers then reports it as an unhandled rejection besides the 400).
 */
async function safeContentsOf(content: pkijs.ContentInfo, password: ArrayBuffer): Promise<pkijs.SafeContents> {
  if (content.contentType === DATA) return pkijs.SafeContents.fromBER((content.content as asn1js.OctetString).getValue());
  if (content.contentType !== ENCRYPTED_DATA) throw new Error("a part neither plain nor password-encrypted");
  const { encryptedContentInfo } = new pkijs.EncryptedData({ schema: content.content });
  return pkijs.SafeContents.fromBER(await pkiEngine.decryptEncryptedContentInfo({ encryptedContentInfo, password }));
}

export async function readPkcs12(
  data: Uint8Array,
  password: string,
  refuse: (message: string) => ValidationError,
): Promise<{ der: Uint8Array; pkcs8: Uint8Array }> {
  const parsed = asn1js.fromBER(data);
  if (parsed.offset === -1) throw refuse("is neither PEM text nor a PKCS #12 file");
  let pfx: pkijs.PFX;
  try {
    pfx = new pkijs.PFX({ schema: parsed.result });
  } catch {
    throw refuse("is neither PEM text nor a PKCS #12 file");
  }
  // The MAC's key derivation is a loop of hashes as long as the file says: bounded before it runs.
  if ((pfx.macData?.iterations ?? 1) > APPLE_PAY.maxPkcs12Iterations) {
    throw refuse(`is a PKCS #12 file of more than ${APPLE_PAY.maxPkcs12Iterations} iterations`);
  }
  const secret = utf8.encode(password).buffer as ArrayBuffer;
  const certificates: Uint8Array[] = [];
  const keys: Uint8Array[] = [];
  try {
    await pfx.parseInternalValues({ password: secret, checkIntegrity: true }, pkiEngine);
    const safe = pfx.parsedValue?.authenticatedSafe;
    if (!safe) throw new Error("no authenticated safe");
    for (const content of safe.safeContents) {
      for (const bag of (await safeContentsOf(content, secret)).safeBags) {
        if (bag.bagId === CERT_BAG) {
          const certBag = bag.bagValue as pkijs.CertBag;
          if (certBag.certId === X509_CERTIFICATE) certificates.push(new Uint8Array(certBag.parsedValue.toSchema().toBER(false)));
        } else if (bag.bagId === KEY_BAG) {
          keys.push(new Uint8Array((bag.bagValue as pkijs.KeyBag).toSchema().toBER(false)));
        } else if (bag.bagId === SHROUDED_KEY_BAG) {
          const shrouded = bag.bagValue as pkijs.PKCS8ShroudedKeyBag;
          const encryptedContentInfo = new pkijs.EncryptedContentInfo({
            contentEncryptionAlgorithm: shrouded.encryptionAlgorithm,
            encryptedContent: shrouded.encryptedData,
          });
          keys.push(new Uint8Array(await pkiEngine.decryptEncryptedContentInfo({ encryptedContentInfo, password: secret })));
        }
      }
    }
  } catch {
    throw refuse(
      "is a PKCS #12 file that does not open with this password, or is encrypted with a legacy cipher (3DES, RC2): " +
        "export it with AES (OpenSSL 3's default) or send PEM",
    );
  }
  if (certificates.length !== 1) throw refuse("is a PKCS #12 file that must hold exactly one certificate");
  if (keys.length !== 1) throw refuse("is a PKCS #12 file that must hold exactly one private key");
  return { der: certificates[0]!, pkcs8: keys[0]! };
}
