import { principalForKey } from "../auth/service";
import type { RequestContext } from "../context";
import { ProblemError } from "../errors";

/*
 * The elements' frame page (public/elements/v1/frame.html, served at FRAME_PATH): the one static
 * asset the worker serves itself, because its headers depend on the public key in its URL.
 */

export const FRAME_PATH = "/elements/v1/frame";

/**
 * The frame page's Content-Security-Policy, its only copy: no inline script or style, nothing
 * loaded or sent anywhere but the vault's own origin, no images or fonts (a style cannot call out).
 */
export const FRAME_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; font-src 'none'; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'";

/** A refusal shown as JSON in a tab, and shown nowhere when framed: no page may embed it. */
const UNFRAMEABLE = { "content-security-policy": "default-src 'none'; frame-ancestors 'none'" };

/** Why a frame page was refused: the same answer whether the key is unknown, revoked, expired or not public. */
class FrameRefusedError extends ProblemError {
  constructor(status: 401 | 403, detail: string) {
    super(status, status === 401 ? "Unauthorized" : "Forbidden", detail, undefined, UNFRAMEABLE);
  }
}

/**
 * The `frame-ancestors` sources for a frame of this key: the vault's own pages and the key's
 * allowed_origins, or null (any page) when it lists none. Only an active public key gets a frame: a
 * private or management key in a page's URL has leaked already, and must not be made to work there.
 * Unknown, revoked, expired, private and management keys get one answer, which tells nobody more
 * about a key than the API itself would. `claimedOrigin` is the page the frame will talk to: one the
 * key does not allow is refused here rather than left to the browser.
 */
export async function frameAncestorsOf(context: RequestContext, key: string | undefined, claimedOrigin: string | undefined) {
  const principal = key ? await principalForKey(context, key).catch(() => null) : null;
  if (principal?.applicationType !== "public") {
    throw new FrameRefusedError(401, "A frame is served only for an active public API key (the key parameter)");
  }
  const allowed = principal.allowedOrigins;
  if (allowed.length === 0) return null;
  if (claimedOrigin === undefined || !allowed.includes(claimedOrigin)) {
    throw new FrameRefusedError(403, "The page's origin (the origin parameter) is not among the key's allowed_origins");
  }
  return ["'self'", ...allowed];
}

/** The frame page's headers: its policy, with frame-ancestors when the key restricts them. */
export function frameHeaders(ancestors: string[] | null): Record<string, string> {
  return {
    "content-security-policy": ancestors ? `${FRAME_POLICY}; frame-ancestors ${ancestors.join(" ")}` : FRAME_POLICY,
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
  };
}
