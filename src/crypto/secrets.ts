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

/** Formats 32 hex digits of a digest as a version-8 (custom) UUID: ids derived from something else, the same every time. */
export function uuidFrom(hex: string): string {
  const h = hex.slice(0, 32).split("");
  h[12] = "8";
  h[16] = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  const s = h.join("");
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}

/** Compares two secrets in time independent of where they differ. */
export async function secretsEqual(a: string, b: string): Promise<boolean> {
  const [left, right] = await Promise.all([sha256Hex(a), sha256Hex(b)]);
  let difference = 0;
  for (let i = 0; i < left.length; i++) difference |= left.charCodeAt(i) ^ right.charCodeAt(i);
  return difference === 0;
}
