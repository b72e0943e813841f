import { type FrameParameters, type PageSession, RETRIEVE_TAKES_A_SESSION, type RevealOperation, randomHex } from "../protocol";
import { badRequest } from "./problems";
import { isTokenId } from "./token-id";
import { callVault, type VaultOutcome } from "./vault";

/*
 * Sessions and revealed tokens. A session's key stays in the frame that created the session: once
 * the merchant's server authorizes it, it reads tokens, and page script could send it anywhere. The
 * page names the session by a handle, and this frame retrieves with the key. A token it retrieves
 * stays here too: the page gets it with each data leaf replaced by a reference, and only a read-only
 * text frame of the same init can ask for a reference's value (./channel.ts), to show it. Nothing
 * turns a handle or a reference back into what it stands for in the page.
 */

/** The keys of the sessions this frame created, by handle; they leave only in requests to the vault. */
const sessionKeys = new Map<string, string>();

/** The values of the tokens this frame retrieved, by reference. */
const revealed = new Map<string, unknown>();

/** A reference's value, when this frame holds it. */
export function revealedValue(reference: string): unknown {
  return revealed.get(reference);
}

export function isRevealOperation(value: unknown): value is RevealOperation {
  return value === "sessions.create" || value === "tokens.retrieve";
}

export async function runRevealOperation(parameters: FrameParameters, operation: RevealOperation, body: unknown): Promise<VaultOutcome> {
  if (operation === "sessions.create") {
    const answer = await callVault(parameters, "POST", "/sessions", parameters.key);
    if (!answer.ok) return answer;
    const created = answer.body as { session_key: string; nonce: string; expires_at: string };
    const session: PageSession = { handle: `tvses_${randomHex()}`, nonce: created.nonce, expiresAt: created.expires_at };
    sessionKeys.set(session.handle, created.session_key);
    return { ok: true, body: session };
  }
  const { id, session } = (typeof body === "object" && body !== null ? body : {}) as { id?: unknown; session?: unknown };
  if (!isTokenId(id)) {
    return { ok: false, problem: badRequest("tokens.retrieve takes a token id: a UUID, or the id chosen when the token was created") };
  }
  const key = typeof session === "string" ? sessionKeys.get(session) : undefined;
  if (key === undefined) return { ok: false, problem: badRequest(RETRIEVE_TAKES_A_SESSION) };
  const answer = await callVault(parameters, "GET", `/tokens/${encodeURIComponent(id)}`, key);
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
  const reference = `tvref_${randomHex()}`;
  revealed.set(reference, data);
  return reference;
}
