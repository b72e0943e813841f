import { toBase64Url, toHex, utf8 } from "./encoding";

/** Longer strings are not API or proxy keys: refused without hashing or remembering them. */
export { SECRET_MAX_LENGTH } from "../limits";

/** A random secret with a recognisable prefix and 256 bits of entropy (API keys, proxy keys). */
export function generateSecret(prefix: string): string {
  return `${prefix}_${toBase64Url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/** API and proxy keys are stored only as this digest; the plaintext is shown once. */
export async function sha256Hex(value: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", utf8.encode(value)));
}

/** Compares two secrets in time independent of where they differ. */
export async function secretsEqual(a: string, b: string): Promise<boolean> {
  const [left, right] = await Promise.all([sha256Hex(a), sha256Hex(b)]);
  let difference = 0;
  for (let i = 0; i < left.length; i++) difference |= left.charCodeAt(i) ^ right.charCodeAt(i);
  return difference === 0;
}
