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
const PBES2 = "1.2.840.113549.1.5.13";
const PBKDF2 = "1.2.840.113549.1.5.12";
/** hmacWithSHA1, -SHA256, -SHA384, -SHA512 (RFC 8018): the PBKDF2 PRFs WebCrypto runs. */
const HMAC_SHA = new Set(["1.2.840.113549.2.7", "1.2.840.113549.2.9", "1.2.840.113549.2.10", "1.2.840.113549.2.11"]);
/** AES-128-CBC, AES-192-CBC, AES-256-CBC. */
const AES_CBC = new Set(["2.16.840.1.101.3.4.1.2", "2.16.840.1.101.3.4.1.22", "2.16.840.1.101.3.4.1.42"]);

const NOT_PKCS12 = "is neither PEM text nor a PKCS #12 file";
const LEGACY =
  "is a PKCS #12 file encrypted with a legacy or unknown cipher (3DES, RC2): export it with AES (OpenSSL 3's default) or send PEM";
const WRONG_PASSWORD = "is a PKCS #12 file that does not open with this password";
const TOO_MANY_ITERATIONS = `is a PKCS #12 file of more than ${APPLE_PAY.maxPkcs12Iterations} iterations`;

type Refuse = (message: string) => ValidationError;

/** What `read` answers, or the refusal `message` when the file's structure does not parse. */
function parsed<T>(read: () => T, refuse: Refuse, message = NOT_PKCS12): T {
  try {
    return read();
  } catch {
    throw refuse(message);
  }
}

/**
 * Refuses, before anything is derived, an encryption other than PBES2 of PBKDF2 (an HMAC-SHA PRF)
 * and AES-CBC, and a PBKDF2 count past the bound: pkijs would run any count, and any key
 * derivation named, as PBKDF2.
 */
function checkEncryption(algorithm: pkijs.AlgorithmIdentifier, refuse: Refuse): void {
  const { pbes2, kdf } = parsed(
    () => {
      if (algorithm.algorithmId !== PBES2) throw new Error("not PBES2");
      const pbes2 = new pkijs.PBES2Params({ schema: algorithm.algorithmParams });
      return { pbes2, kdf: new pkijs.PBKDF2Params({ schema: pbes2.keyDerivationFunc.algorithmParams }) };
    },
    refuse,
    LEGACY,
  );
  const known =
    pbes2.keyDerivationFunc.algorithmId === PBKDF2 &&
    AES_CBC.has(pbes2.encryptionScheme.algorithmId) &&
    (kdf.prf === undefined || HMAC_SHA.has(kdf.prf.algorithmId));
  if (!known) throw refuse(LEGACY);
  checkIterations(kdf.iterationCount, refuse);
}

/**
 * asn1js reads an INTEGER of 4 bytes or more (a count from 2^23) as 0, so a count below 1 is one too
 * large to read, or one no tool writes: both are refused as too many.
 */
function checkIterations(iterations: number, refuse: Refuse): void {
  if (!(iterations >= 1 && iterations <= APPLE_PAY.maxPkcs12Iterations)) throw refuse(TOO_MANY_ITERATIONS);
}

/** Bounds the bags read so far and checks each shrouded key's encryption, before any key is decrypted. */
function checkBags(bags: pkijs.SafeBag[], refuse: Refuse): void {
  if (bags.length > APPLE_PAY.maxPkcs12Bags) throw refuse(`is a PKCS #12 file of more than ${APPLE_PAY.maxPkcs12Bags} bags`);
  for (const bag of bags) {
    if (bag.bagId === SHROUDED_KEY_BAG) checkEncryption((bag.bagValue as pkijs.PKCS8ShroudedKeyBag).encryptionAlgorithm, refuse);
  }
}

function safeContentsOf(content: ArrayBuffer, refuse: Refuse): pkijs.SafeBag[] {
  return parsed(() => pkijs.SafeContents.fromBER(content).safeBags, refuse);
}

/** Runs a key derivation and decryption whose parameters were checked: a failure is the password's. */
async function opened(open: () => Promise<ArrayBuffer>, refuse: Refuse): Promise<ArrayBuffer> {
  try {
    return await open();
  } catch {
    throw refuse(WRONG_PASSWORD);
  }
}

/**
 * Every key derivation is a loop as long as the file says, and each encrypted part and shrouded key
 * names its own: the parts, the bags and every count are bounded before the first derivation runs,
 * and a file of more than one key is refused before its keys are decrypted.
 */
export async function readPkcs12(data: Uint8Array, password: string, refuse: Refuse): Promise<{ der: Uint8Array; pkcs8: Uint8Array }> {
  const pfx = parsed(() => {
    const asn = asn1js.fromBER(data);
    if (asn.offset === -1) throw new Error("not BER");
    return new pkijs.PFX({ schema: asn.result });
  }, refuse);
  // Only a password MAC: a public-key integrity mode would verify with whatever key the file carries.
  if (pfx.authSafe.contentType !== DATA || !pfx.macData) throw refuse("is a PKCS #12 file without a password integrity MAC");
  checkIterations(pfx.macData.iterations ?? 1, refuse);
  const authSafeContent = parsed(() => (pfx.authSafe.content as asn1js.OctetString).getValue(), refuse);
  const parts = parsed(() => pkijs.AuthenticatedSafe.fromBER(authSafeContent).safeContents, refuse);
  if (parts.length > APPLE_PAY.maxPkcs12Parts) throw refuse(`is a PKCS #12 file of more than ${APPLE_PAY.maxPkcs12Parts} parts`);

  const bags: pkijs.SafeBag[] = [];
  const encrypted: pkijs.EncryptedContentInfo[] = [];
  for (const part of parts) {
    if (part.contentType === DATA) {
      bags.push(
        ...safeContentsOf(
          parsed(() => (part.content as asn1js.OctetString).getValue(), refuse),
          refuse,
        ),
      );
    } else if (part.contentType === ENCRYPTED_DATA) {
      const info = parsed(() => new pkijs.EncryptedData({ schema: part.content }).encryptedContentInfo, refuse);
      checkEncryption(info.contentEncryptionAlgorithm, refuse);
      encrypted.push(info);
    } else {
      throw refuse("is a PKCS #12 file with a part neither plain nor password-encrypted");
    }
  }
  checkBags(bags, refuse);

  const secret = utf8.encode(password).buffer as ArrayBuffer;
  await opened(async () => {
    await pfx.parseInternalValues({ password: secret, checkIntegrity: true }, pkiEngine);
    return secret;
  }, refuse);
  for (const encryptedContentInfo of encrypted) {
    const content = await opened(() => pkiEngine.decryptEncryptedContentInfo({ encryptedContentInfo, password: secret }), refuse);
    bags.push(...safeContentsOf(content, refuse));
    checkBags(bags, refuse);
  }

  const certificates = bags.filter((bag) => bag.bagId === CERT_BAG && (bag.bagValue as pkijs.CertBag).certId === X509_CERTIFICATE);
  const keyBags = bags.filter((bag) => bag.bagId === KEY_BAG || bag.bagId === SHROUDED_KEY_BAG);
  if (certificates.length !== 1) throw refuse("is a PKCS #12 file that must hold exactly one certificate");
  if (keyBags.length !== 1) throw refuse("is a PKCS #12 file that must hold exactly one private key");
  const certificate = (certificates[0]!.bagValue as pkijs.CertBag).parsedValue as pkijs.Certificate;
  const keyBag = keyBags[0]!;
  if (keyBag.bagId === KEY_BAG) {
    return {
      der: new Uint8Array(certificate.toSchema().toBER(false)),
      pkcs8: new Uint8Array((keyBag.bagValue as pkijs.KeyBag).toSchema().toBER(false)),
    };
  }
  const shrouded = keyBag.bagValue as pkijs.PKCS8ShroudedKeyBag;
  const encryptedContentInfo = new pkijs.EncryptedContentInfo({
    contentEncryptionAlgorithm: shrouded.encryptionAlgorithm,
    encryptedContent: shrouded.encryptedData,
  });
  const pkcs8 = await opened(() => pkiEngine.decryptEncryptedContentInfo({ encryptedContentInfo, password: secret }), refuse);
  return { der: new Uint8Array(certificate.toSchema().toBER(false)), pkcs8: new Uint8Array(pkcs8) };
}
