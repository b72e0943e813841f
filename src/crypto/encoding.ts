export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function toBase64Url(bytes: Uint8Array): string {
  return toBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64Url(text: string): Uint8Array {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  return bytesOf(atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4)));
}

export function fromBase64(text: string): Uint8Array {
  return bytesOf(atob(text));
}

/** The bytes of a binary string (one char per byte). A plain loop: Uint8Array.from with a map is several times slower. */
function bytesOf(binary: string): Uint8Array {
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  let hex = "";
  for (const byte of new Uint8Array(bytes)) hex += HEX_BYTES[byte];
  return hex;
}

/** The bytes of an even-length string of hex digits (a digest, a UUID without its dashes). */
export function fromHex(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

export const utf8 = new TextEncoder();
export const fromUtf8 = new TextDecoder();
