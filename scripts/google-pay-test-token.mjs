#!/usr/bin/env node
// `npm run -s google-pay:test-token -- --merchant-id <id> --merchant-key <file>`: prints a Google Pay
// ECv2 token (the `google_payment_data` to POST /google-pay) signed by the local test root that
// `npm start` trusts, for the recipient `merchant:<id>`, encrypted to the merchant key's public half.
// `npm run -s google-pay:test-token -- --new-merchant-key` prints a new merchant private key (PKCS #8,
// base64) to upload to the registration. Local testing only: no deployed vault trusts this root.
import {
  createCipheriv,
  createECDH,
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hkdfSync,
  sign,
} from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { localTestRoot, testRootPath } from "./google-pay-test-root.mjs";

const DAY_MS = 24 * 60 * 60 * 1000;

const { values } = parseArgs({
  options: {
    "merchant-id": { type: "string" },
    "merchant-key": { type: "string" },
    "new-merchant-key": { type: "boolean" },
    "auth-method": { type: "string", default: "PAN_ONLY" },
    pan: { type: "string", default: "4111111111111111" },
    "expiration-month": { type: "string", default: "12" },
    "expiration-year": { type: "string", default: String(new Date().getUTCFullYear() + 3) },
    cryptogram: { type: "string", default: "AgAAAAAABk4DWZ4C28yUQAAAAAA=" },
    eci: { type: "string", default: "07" },
  },
});

function fail(message) {
  console.error(message);
  process.exit(2);
}

if (values["new-merchant-key"]) {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  console.log(privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"));
  process.exit(0);
}

const merchantId = values["merchant-id"];
const merchantKeyFile = values["merchant-key"];
if (!merchantId || !merchantKeyFile) {
  fail(
    "usage: google-pay-test-token.mjs --merchant-id <merchant_identifier> --merchant-key <file with the PKCS #8 private key, base64 or PEM>",
  );
}
if (!["PAN_ONLY", "CRYPTOGRAM_3DS"].includes(values["auth-method"])) fail("--auth-method is PAN_ONLY or CRYPTOGRAM_3DS");
if (!existsSync(testRootPath)) fail(`${testRootPath} is missing: run \`npm start\` once, which makes the local test root and trusts it`);

/** The merchant's public point, uncompressed (the recipient of the message's ECDH). */
function merchantPublicPoint(file) {
  const text = readFileSync(file, "utf8").trim();
  const key = text.startsWith("-----")
    ? createPrivateKey(text)
    : createPrivateKey({ key: Buffer.from(text, "base64"), format: "der", type: "pkcs8" });
  const jwk = createPublicKey(key).export({ format: "jwk" });
  return Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]);
}

/** Google's length-prefixed concatenation of what a signature covers. */
function lengthValue(...parts) {
  return Buffer.concat(
    parts.flatMap((part) => {
      const bytes = Buffer.from(part, "utf8");
      const length = Buffer.alloc(4);
      length.writeUInt32LE(bytes.length);
      return [length, bytes];
    }),
  );
}

const ecdsa = (privateKey, data) => sign("sha256", data, { key: privateKey, dsaEncoding: "der" }).toString("base64");

/** ECIES-v1 (ECDH P-256, HKDF-SHA256 with info "Google", AES-256-CTR, HMAC-SHA256) to the merchant's key. */
function encryptMessage(plaintext, recipientPoint) {
  const ephemeral = createECDH("prime256v1");
  const ephemeralPublicKey = ephemeral.generateKeys();
  const shared = ephemeral.computeSecret(recipientPoint);
  const derived = Buffer.from(hkdfSync("sha256", Buffer.concat([ephemeralPublicKey, shared]), Buffer.alloc(32), "Google", 64));
  const cipher = createCipheriv("aes-256-ctr", derived.subarray(0, 32), Buffer.alloc(16));
  const encrypted = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return JSON.stringify({
    encryptedMessage: encrypted.toString("base64"),
    ephemeralPublicKey: ephemeralPublicKey.toString("base64"),
    tag: createHmac("sha256", derived.subarray(32)).update(encrypted).digest("base64"),
  });
}

const now = Date.now();
const details = {
  pan: values.pan,
  expirationMonth: Number(values["expiration-month"]),
  expirationYear: Number(values["expiration-year"]),
  authMethod: values["auth-method"],
  ...(values["auth-method"] === "CRYPTOGRAM_3DS" ? { cryptogram: values.cryptogram, eciIndicator: values.eci } : {}),
};
const message = JSON.stringify({
  gatewayMerchantId: merchantId,
  messageExpiration: String(now + DAY_MS),
  messageId: `local-test-${crypto.randomUUID()}`,
  paymentMethod: "CARD",
  paymentMethodDetails: details,
});

// A fresh intermediate signing key for each token, signed by the local root for a day.
const rootKey = createPrivateKey({ key: Buffer.from(localTestRoot().privateKey, "base64"), format: "der", type: "pkcs8" });
const intermediate = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const signedKey = JSON.stringify({
  keyValue: intermediate.publicKey.export({ format: "der", type: "spki" }).toString("base64"),
  keyExpiration: String(now + DAY_MS),
});
const signedMessage = encryptMessage(message, merchantPublicPoint(merchantKeyFile));
const token = {
  protocolVersion: "ECv2",
  signature: ecdsa(intermediate.privateKey, lengthValue("Google", `merchant:${merchantId}`, "ECv2", signedMessage)),
  intermediateSigningKey: { signedKey, signatures: [ecdsa(rootKey, lengthValue("Google", "ECv2", signedKey))] },
  signedMessage,
};
console.log(JSON.stringify(token));
