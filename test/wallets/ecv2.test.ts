import { describe, expect, it } from "vitest";
import { type EcV2Recipient, messageOf, type RootSigningKey, unsealEcV2 } from "../../src/google-pay/ecv2";
import { flipByte, sealEcV2 } from "../support/google-pay";
import {
  ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64,
  ALTERNATE_PUBLIC_SIGNING_KEY,
  GOOGLE_SIGNING_EC_V1_PUBLIC_KEY_X509_BASE64,
  GOOGLE_SIGNING_EC_V2_PUBLIC_KEY_X509_BASE64,
  MERCHANT_PRIVATE_KEY_PKCS8_BASE64,
  PLAINTEXT,
  RECIPIENT_ID,
} from "./tink-ecv2-vectors";

/*
 * The ECv2 opener against Tink's published test keys (tink-ecv2-vectors.ts), rule by rule as Tink's
 * PaymentMethodTokenRecipientTest states them: each token is sealed now by the node sender in
 * test/support/google-pay.ts, so its expiries are live.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

const rootKey = (keyValue = GOOGLE_SIGNING_EC_V2_PUBLIC_KEY_X509_BASE64, extra: Partial<RootSigningKey> = {}): RootSigningKey => ({
  keyValue,
  protocolVersion: "ECv2",
  keyExpiration: String(Date.now() + DAY_MS),
  ...extra,
});

async function privateKey(pkcs8: string): Promise<CryptoKey> {
  const bytes = Uint8Array.from(atob(pkcs8), (char) => char.charCodeAt(0));
  return crypto.subtle.importKey("pkcs8", bytes, { name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
}

async function recipient(overrides: Partial<EcV2Recipient> = {}): Promise<EcV2Recipient> {
  return {
    recipientId: RECIPIENT_ID,
    privateKeys: [await privateKey(MERCHANT_PRIVATE_KEY_PKCS8_BASE64)],
    rootKeys: [rootKey()],
    now: Date.now(),
    ...overrides,
  };
}

async function refusalOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { code: string }).code;
  }
  throw new Error("expected a refusal");
}

describe("ECv2 (Tink's published test keys)", () => {
  it("unseals to the plaintext Tink states", async () => {
    expect(await unsealEcV2(sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID }), await recipient())).toBe(PLAINTEXT);
  });

  it("tries every private key of the merchant", async () => {
    const keys = [await privateKey(ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64), await privateKey(MERCHANT_PRIVATE_KEY_PKCS8_BASE64)];
    expect(await unsealEcV2(sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID }), await recipient({ privateKeys: keys }))).toBe(PLAINTEXT);
  });

  it("fails to decrypt with a different private key", async () => {
    const keys = [await privateKey(ALTERNATE_MERCHANT_PRIVATE_KEY_PKCS8_BASE64)];
    expect(await refusalOf(unsealEcV2(sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID }), await recipient({ privateKeys: keys })))).toBe(
      "decryption_failed",
    );
  });

  it("tries every root key, and trusts none of another protocol version, nor an expired one, nor one without expiry", async () => {
    const token = sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID });
    const garbled = [rootKey("not base64!"), rootKey("AAAA")];
    expect(await unsealEcV2(token, await recipient({ rootKeys: [...garbled, rootKey(ALTERNATE_PUBLIC_SIGNING_KEY), rootKey()] }))).toBe(
      PLAINTEXT,
    );
    expect(await refusalOf(unsealEcV2(token, await recipient({ rootKeys: [rootKey(ALTERNATE_PUBLIC_SIGNING_KEY)] })))).toBe(
      "intermediate_signature_invalid",
    );
    const ecv1 = rootKey(GOOGLE_SIGNING_EC_V1_PUBLIC_KEY_X509_BASE64, { protocolVersion: "ECv1" });
    const wrongVersion = rootKey(undefined, { protocolVersion: "ECv1" });
    expect(await refusalOf(unsealEcV2(token, await recipient({ rootKeys: [ecv1, wrongVersion] })))).toBe("no_root_signing_key");
    const expired = rootKey(undefined, { keyExpiration: String(Date.now() - DAY_MS) });
    expect(await refusalOf(unsealEcV2(token, await recipient({ rootKeys: [expired] })))).toBe("no_root_signing_key");
    const { keyExpiration: _, ...withoutExpiry } = rootKey();
    expect(await refusalOf(unsealEcV2(token, await recipient({ rootKeys: [withoutExpiry] })))).toBe("no_root_signing_key");
  });

  it("refuses a changed signed message, signed key, or a wrong recipient id", async () => {
    const token = sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID });
    expect(await refusalOf(unsealEcV2({ ...token, signedMessage: `${token.signedMessage} ` }, await recipient()))).toBe(
      "signature_invalid",
    );
    const signedKey = `${token.intermediateSigningKey.signedKey} `;
    expect(
      await refusalOf(unsealEcV2({ ...token, intermediateSigningKey: { ...token.intermediateSigningKey, signedKey } }, await recipient())),
    ).toBe("intermediate_signature_invalid");
    expect(await refusalOf(unsealEcV2(token, await recipient({ recipientId: `not${RECIPIENT_ID}` })))).toBe("signature_invalid");
  });

  it("refuses a wrong intermediate signature, and accepts when another of the signatures verifies", async () => {
    const token = sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID });
    const [correct] = token.intermediateSigningKey.signatures;
    const wrong = flipByte(correct!, 0);
    const withSignatures = (signatures: string[]) => ({
      ...token,
      intermediateSigningKey: { ...token.intermediateSigningKey, signatures },
    });
    expect(await refusalOf(unsealEcV2(withSignatures([wrong]), await recipient()))).toBe("intermediate_signature_invalid");
    expect(await unsealEcV2(withSignatures([wrong, correct!]), await recipient())).toBe(PLAINTEXT);
  });

  it("refuses an expired intermediate signing key", async () => {
    const token = sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID, keyExpiration: Date.now() - DAY_MS });
    expect(await refusalOf(unsealEcV2(token, await recipient()))).toBe("intermediate_key_expired");
  });

  it("refuses an expired message and accepts one that is not", async () => {
    const live = JSON.stringify({ messageExpiration: String(Date.now() + DAY_MS) });
    expect(messageOf(await unsealEcV2(sealEcV2(live, { recipientId: RECIPIENT_ID }), await recipient()), Date.now())).toEqual(
      JSON.parse(live),
    );
    const expired = JSON.stringify({ messageExpiration: String(Date.now() - DAY_MS) });
    const plaintext = await unsealEcV2(sealEcV2(expired, { recipientId: RECIPIENT_ID }), await recipient());
    expect(() => messageOf(plaintext, Date.now())).toThrow(expect.objectContaining({ code: "message_expired" }));
  });

  it("refuses another protocol version", async () => {
    const token = sealEcV2(PLAINTEXT, { recipientId: RECIPIENT_ID });
    expect(await refusalOf(unsealEcV2({ ...token, protocolVersion: "ECv1" }, await recipient()))).toBe("unsupported_protocol_version");
  });
});
