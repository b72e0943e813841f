import { createCipheriv, createECDH, createHmac, hkdfSync, sign } from "node:crypto";
import {
  GOOGLE_SIGNING_EC_V2_INTERMEDIATE_PRIVATE_KEY_PKCS8_BASE64,
  GOOGLE_SIGNING_EC_V2_INTERMEDIATE_PUBLIC_KEY_X509_BASE64,
  GOOGLE_SIGNING_EC_V2_PRIVATE_KEY_PKCS8_BASE64,
  MERCHANT_PUBLIC_KEY_BASE64,
} from "../wallets/tink-ecv2-vectors";

/*
 * A sender of ECv2 tokens, as Tink's PaymentMethodTokenSender seals them, written with node's crypto
 * (not the WebCrypto code the vault opens them with): Google's test keys sign, the merchant's public
 * key encrypts. Tests seal fresh tokens so that the expiries are live, and change any part of one.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

function lengthValue(...parts: string[]): Buffer {
  return Buffer.concat(
    parts.flatMap((part) => {
      const bytes = Buffer.from(part, "utf8");
      const length = Buffer.alloc(4);
      length.writeUInt32LE(bytes.length);
      return [length, bytes];
    }),
  );
}

function ecdsaSign(pkcs8Base64: string, data: Buffer): string {
  const key = { key: Buffer.from(pkcs8Base64, "base64"), format: "der", type: "pkcs8", dsaEncoding: "der" } as const;
  return sign("sha256", data, key).toString("base64");
}

export interface SealOptions {
  recipientId: string;
  /** The merchant's raw uncompressed public key, base64; Tink's merchant key by default. */
  recipientPublicKey?: string;
  /** The intermediate signing key's expiry; a day ahead by default. */
  keyExpiration?: number;
  rootPrivateKey?: string;
}

/** ECIES-v1 to the recipient's public key: Google's signedMessage (a JSON string). */
function encryptMessage(plaintext: string, recipientPublicKey = MERCHANT_PUBLIC_KEY_BASE64): string {
  const ephemeral = createECDH("prime256v1");
  const ephemeralPublicKey = ephemeral.generateKeys();
  const shared = ephemeral.computeSecret(Buffer.from(recipientPublicKey, "base64"));
  const derived = Buffer.from(hkdfSync("sha256", Buffer.concat([ephemeralPublicKey, shared]), Buffer.alloc(32), "Google", 64));
  const cipher = createCipheriv("aes-256-ctr", derived.subarray(0, 32), Buffer.alloc(16));
  const encrypted = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const tag = createHmac("sha256", derived.subarray(32)).update(encrypted).digest();
  return JSON.stringify({
    encryptedMessage: encrypted.toString("base64"),
    ephemeralPublicKey: ephemeralPublicKey.toString("base64"),
    tag: tag.toString("base64"),
  });
}

/** A whole ECv2 token: the signed intermediate key, the encrypted message and its signature for the recipient. */
export function sealEcV2(plaintext: string, options: SealOptions) {
  const signedKey = JSON.stringify({
    keyValue: GOOGLE_SIGNING_EC_V2_INTERMEDIATE_PUBLIC_KEY_X509_BASE64,
    keyExpiration: String(options.keyExpiration ?? Date.now() + DAY_MS),
  });
  const signedMessage = encryptMessage(plaintext, options.recipientPublicKey);
  return {
    protocolVersion: "ECv2",
    signature: ecdsaSign(
      GOOGLE_SIGNING_EC_V2_INTERMEDIATE_PRIVATE_KEY_PKCS8_BASE64,
      lengthValue("Google", options.recipientId, "ECv2", signedMessage),
    ),
    intermediateSigningKey: {
      signedKey,
      signatures: [
        ecdsaSign(options.rootPrivateKey ?? GOOGLE_SIGNING_EC_V2_PRIVATE_KEY_PKCS8_BASE64, lengthValue("Google", "ECv2", signedKey)),
      ],
    },
    signedMessage,
  };
}

export type SealedToken = ReturnType<typeof sealEcV2>;

/** Google's decrypted payment message for a card, expiring in a day unless told otherwise. */
export function paymentMessage(details: Record<string, unknown>, messageExpiration = Date.now() + DAY_MS): string {
  return JSON.stringify({
    gatewayMerchantId: "vault-tests",
    messageExpiration: String(messageExpiration),
    messageId: `AH2Ejtc${crypto.randomUUID().replaceAll("-", "")}`,
    paymentMethod: "CARD",
    paymentMethodDetails: details,
  });
}

export const PAN_ONLY = { authMethod: "PAN_ONLY", pan: "4111111111111111", expirationMonth: 12, expirationYear: 2030 };

export const CRYPTOGRAM_3DS = {
  authMethod: "CRYPTOGRAM_3DS",
  pan: "4895370012003478",
  expirationMonth: 12,
  expirationYear: 2030,
  cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=",
  eciIndicator: "07",
};

/** The base64 value with one byte flipped (the byte at `index`, from the end when negative). */
export function flipByte(base64: string, index = 10): string {
  const bytes = Buffer.from(base64, "base64");
  const at = index < 0 ? bytes.length + index : index;
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString("base64");
}
