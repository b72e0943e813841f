import { fromBase64Url, toBase64Url, utf8 } from "./encoding";
import type { Keyring } from "./keyring";

/**
 * The vault's own entrypoints that act on what their props say. Anything that can bind an
 * entrypoint of this worker can choose its props, so the vault signs the props it sets and the
 * entrypoint checks the signature before it reads them.
 */
export type SignedEntrypoint = "Bridge" | "Egress";

/** Props as the vault hands them to an entrypoint: the values and the vault's MAC over them. */
export type SignedProps<P extends object> = P & { mac: string };

/** Signs props of plain values (strings, numbers, booleans), which is what the entrypoints take. */
export async function signProps<P extends object>(keyring: Keyring, entrypoint: SignedEntrypoint, props: P): Promise<SignedProps<P>> {
  const mac = await crypto.subtle.sign("HMAC", await keyring.propsKey(), signedText(entrypoint, props as Record<string, unknown>));
  return { ...props, mac: toBase64Url(new Uint8Array(mac)) };
}

/** The props without their MAC when the vault made it for this entrypoint and these values; otherwise null. */
export async function verifiedProps<P extends object>(keyring: Keyring, entrypoint: SignedEntrypoint, props: unknown): Promise<P | null> {
  if (props === null || typeof props !== "object") return null;
  const { mac, ...values } = props as Record<string, unknown>;
  if (typeof mac !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(mac)) return null;
  const valid = await crypto.subtle.verify("HMAC", await keyring.propsKey(), fromBase64Url(mac), signedText(entrypoint, values));
  return valid ? (values as unknown as P) : null;
}

/** The entrypoint's name and the props in key order: props signed for one entrypoint never pass at another. */
function signedText(entrypoint: SignedEntrypoint, props: Record<string, unknown>): Uint8Array {
  const entries = Object.keys(props)
    .sort()
    .map((key) => [key, props[key]]);
  return utf8.encode(JSON.stringify([entrypoint, entries]));
}
