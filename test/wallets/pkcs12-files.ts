/**
 * PKCS #12 files a management key could upload to make the vault work: gala's file
 * (GALA_PKCS12_BASE64) taken apart with pkijs, given more parts or key bags or larger PBKDF2
 * counts, and put back together with a MAC made with its password, as an attacker who knows the
 * password they send would.
 */
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { pkiEngine } from "../../src/apple-pay/ec-v1";
import { GALA_PKCS12_BASE64 } from "./apple-pay-vector";

const PASSWORD = new TextEncoder().encode("s3cret").buffer as ArrayBuffer;
const DATA = "1.2.840.113549.1.7.1";
const ENCRYPTED_DATA = "1.2.840.113549.1.7.6";
const SECRET_BAG = "1.2.840.113549.1.12.10.1.5";

const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const b64Of = (bytes: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** Gala's parts: its password-encrypted certificate part, and its plain part holding the shrouded key. */
function galaParts(): { certificatePart: pkijs.ContentInfo; keyBag: pkijs.SafeBag } {
  const pfx = pkijs.PFX.fromBER(bytesOf(GALA_PKCS12_BASE64));
  const safe = pkijs.AuthenticatedSafe.fromBER((pfx.authSafe.content as asn1js.OctetString).getValue());
  const [certificatePart, keyPart] = safe.safeContents as [pkijs.ContentInfo, pkijs.ContentInfo];
  const keyBag = pkijs.SafeContents.fromBER((keyPart.content as asn1js.OctetString).getValue()).safeBags[0]!;
  return { certificatePart, keyBag };
}

/** The algorithm identifier with its PBKDF2 iteration count replaced. */
function withIterations(algorithm: pkijs.AlgorithmIdentifier, iterations: number): pkijs.AlgorithmIdentifier {
  const pbes2 = new pkijs.PBES2Params({ schema: algorithm.algorithmParams });
  const kdf = new pkijs.PBKDF2Params({ schema: pbes2.keyDerivationFunc.algorithmParams });
  kdf.iterationCount = iterations;
  pbes2.keyDerivationFunc.algorithmParams = kdf.toSchema();
  return new pkijs.AlgorithmIdentifier({ algorithmId: algorithm.algorithmId, algorithmParams: pbes2.toSchema() });
}

/** A bag of a secret the vault has no use for (pkijs reads no part without a bag). */
function secretBag(): pkijs.SafeBag {
  return new pkijs.SafeBag({
    bagId: SECRET_BAG,
    // Any object of pkijs will do as the value: SecretBag writes it through its toSchema().
    bagValue: new pkijs.SecretBag({ secretTypeId: DATA, secretValue: new pkijs.AlgorithmIdentifier({ algorithmId: DATA }) }),
  });
}

function plainPart(bags: pkijs.SafeBag[]): pkijs.ContentInfo {
  const contents = new pkijs.SafeContents({ safeBags: bags }).toSchema().toBER(false);
  return new pkijs.ContentInfo({ contentType: DATA, content: new asn1js.OctetString({ valueHex: contents }) });
}

/** A password-encrypted part of one secret bag (which the vault ignores), its key derived with `iterations` of PBKDF2. */
async function emptyEncryptedPart(iterations: number): Promise<pkijs.ContentInfo> {
  const encrypted = new pkijs.EncryptedData();
  await encrypted.encrypt(
    {
      password: PASSWORD,
      contentEncryptionAlgorithm: { name: "AES-CBC", length: 256 },
      hmacHashAlgorithm: "SHA-256",
      iterationCount: iterations,
      contentToEncrypt: new pkijs.SafeContents({ safeBags: [secretBag()] }).toSchema().toBER(false),
    },
    pkiEngine,
  );
  return new pkijs.ContentInfo({ contentType: ENCRYPTED_DATA, content: encrypted.toSchema() });
}

/** The parts as a PKCS #12 file of password `s3cret`, in base64, its MAC of 2,048 iterations. */
async function fileOf(parts: pkijs.ContentInfo[]): Promise<string> {
  const pfx = new pkijs.PFX({
    parsedValue: { integrityMode: 0, authenticatedSafe: new pkijs.AuthenticatedSafe({ safeContents: parts }) },
  });
  await pfx.makeInternalValues(
    { password: PASSWORD, iterations: 2048, pbkdf2HashAlgorithm: "SHA-256", hmacHashAlgorithm: "SHA-256" },
    pkiEngine,
  );
  return b64Of(pfx.toSchema().toBER(false));
}

/** Gala's file with its encrypted part's PBKDF2 count set to `iterations` (its MAC's left small). */
export async function withPartIterations(iterations: number): Promise<string> {
  const { certificatePart, keyBag } = galaParts();
  const encrypted = new pkijs.EncryptedData({ schema: certificatePart.content });
  const info = encrypted.encryptedContentInfo;
  info.contentEncryptionAlgorithm = withIterations(info.contentEncryptionAlgorithm, iterations);
  const part = new pkijs.ContentInfo({ contentType: ENCRYPTED_DATA, content: encrypted.toSchema() });
  return fileOf([part, plainPart([keyBag])]);
}

/** Gala's file with its shrouded key bag's PBKDF2 count set to `iterations`. */
export async function withKeyIterations(iterations: number): Promise<string> {
  const { certificatePart, keyBag } = galaParts();
  const shrouded = keyBag.bagValue as pkijs.PKCS8ShroudedKeyBag;
  shrouded.encryptionAlgorithm = withIterations(shrouded.encryptionAlgorithm, iterations);
  return fileOf([certificatePart, plainPart([keyBag])]);
}

/** Gala's file with `extra` more password-encrypted parts, each of a secret bag and of `iterations` of PBKDF2. */
export async function withExtraParts(extra: number, iterations: number): Promise<string> {
  const { certificatePart, keyBag } = galaParts();
  const padding = [];
  for (let i = 0; i < extra; i++) padding.push(await emptyEncryptedPart(iterations));
  return fileOf([certificatePart, plainPart([keyBag]), ...padding]);
}

/** Gala's file with its shrouded key bag repeated `copies` times: as many key derivations to open them. */
export async function withKeyCopies(copies: number): Promise<string> {
  const { certificatePart, keyBag } = galaParts();
  return fileOf([certificatePart, plainPart(Array.from({ length: copies }, () => keyBag))]);
}

/** Gala's file with its encrypted part's PBES2 naming `kdf` as its key derivation, PBKDF2's parameters left as they are. */
export async function withPartKdf(kdf: string): Promise<string> {
  const { certificatePart, keyBag } = galaParts();
  const encrypted = new pkijs.EncryptedData({ schema: certificatePart.content });
  const info = encrypted.encryptedContentInfo;
  const pbes2 = new pkijs.PBES2Params({ schema: info.contentEncryptionAlgorithm.algorithmParams });
  pbes2.keyDerivationFunc.algorithmId = kdf;
  info.contentEncryptionAlgorithm = new pkijs.AlgorithmIdentifier({
    algorithmId: info.contentEncryptionAlgorithm.algorithmId,
    algorithmParams: pbes2.toSchema(),
  });
  const part = new pkijs.ContentInfo({ contentType: ENCRYPTED_DATA, content: encrypted.toSchema() });
  return fileOf([part, plainPart([keyBag])]);
}

const SAFE_CONTENTS_BAG = "1.2.840.113549.1.12.10.1.6";

/** Gala's file with its shrouded key moved into a SafeContents bag (a bag of bags), its PBKDF2 count set to `iterations`. */
export async function withNestedKey(iterations: number): Promise<string> {
  const { certificatePart, keyBag } = galaParts();
  const shrouded = keyBag.bagValue as pkijs.PKCS8ShroudedKeyBag;
  shrouded.encryptionAlgorithm = withIterations(shrouded.encryptionAlgorithm, iterations);
  const nested = new pkijs.SafeBag({ bagId: SAFE_CONTENTS_BAG, bagValue: new pkijs.SafeContents({ safeBags: [keyBag] }) });
  return fileOf([certificatePart, plainPart([nested])]);
}

/** Gala's file with its MAC's digest algorithm renamed `digest` (the MAC itself left as SHA-256 made it). */
export async function withMacDigest(digest: string): Promise<string> {
  const pfx = pkijs.PFX.fromBER(bytesOf(await withKeyIterations(2048)));
  pfx.macData!.mac.digestAlgorithm = new pkijs.AlgorithmIdentifier({ algorithmId: digest, algorithmParams: new asn1js.Null() });
  return b64Of(pfx.toSchema().toBER(false));
}
