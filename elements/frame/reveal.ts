import type { FrameParameters, RevealOperation } from "../protocol";
import { badRequest } from "./problems";
import { callVault, type VaultOutcome } from "./vault";

/*
 * Sessions and revealed tokens. A token this frame retrieves stays here: the page gets it with each
 * data leaf replaced by a reference, and only a read-only text frame of the same init can ask for a
 * reference's value (./channel.ts), to show it. Nothing turns a reference back into its value in the page.
 */

/** The values of the tokens this frame retrieved, by reference. */
const revealed = new Map<string, unknown>();

/** A reference's value, when this frame holds it. */
export function revealedValue(reference: string): unknown {
  return revealed.get(reference);
}

export function isRevealOperation(value: unknown): value is RevealOperation {
  return value === "sessions.create" || value === "tokens.retrieve";
}

/** An API key as the vault accepts one: printable ASCII, at most 256 characters (src/limits.ts SECRET_MAX_LENGTH). */
const API_KEY_PATTERN = /^[\x21-\x7e]{1,256}$/;

export async function runRevealOperation(parameters: FrameParameters, operation: RevealOperation, body: unknown): Promise<VaultOutcome> {
  if (operation === "sessions.create") {
    const answer = await callVault(parameters, "POST", "/sessions", parameters.key);
    if (!answer.ok) return answer;
    const session = answer.body as { session_key: string; nonce: string; expires_at: string };
    return { ok: true, body: { sessionKey: session.session_key, nonce: session.nonce, expiresAt: session.expires_at } };
  }
  const { id, apiKey } = (typeof body === "object" && body !== null ? body : {}) as { id?: unknown; apiKey?: unknown };
  if (typeof id !== "string" || id === "" || typeof apiKey !== "string" || !API_KEY_PATTERN.test(apiKey)) {
    return { ok: false, problem: badRequest("tokens.retrieve takes a token id and { apiKey: <session key> }") };
  }
  const answer = await callVault(parameters, "GET", `/tokens/${encodeURIComponent(id)}`, apiKey);
  if (!answer.ok) return answer;
  const token = answer.body as Record<string, unknown>;
  return { ok: true, body: { ...token, data: referenced(token.data) } };
}

/** The data with each leaf kept here and replaced by a new reference to it. */
function referenced(data: unknown): unknown {
  if (Array.isArray(data)) return data.map(referenced);
  if (typeof data === "object" && data !== null) {
    return Object.fromEntries(Object.entries(data).map(([member, value]) => [member, referenced(value)]));
  }
  if (data === null || data === undefined) return data;
  const reference = `tvref_${Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
  revealed.set(reference, data);
  return reference;
}
