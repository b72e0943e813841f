import type { Config } from "../env";
import type { ProblemError } from "../errors";
import { cookieNameOf, withoutSessionCookie } from "../http/console-cookie";

/** Headers that describe one connection, not the request: never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Set by the runtime from the destination URL and the body actually sent. */
const RECOMPUTED = new Set(["host", "content-length"]);

/** The request transform may add back names outside this set; the caller may not send them. */
const FORWARDABLE_NAME = /^[A-Za-z0-9_-]+$/;

/** The caller's headers the destination may see, and whether any of their values may hold a reference. */
export interface ForwardableHeaders {
  values: Record<string, string>;
  /** A value holds `{{`: without one, detokenization has nothing to replace in them. */
  mightHoldReferences: boolean;
}

/**
 * The caller's headers as the destination should see them: without any of the vault's own headers,
 * hop-by-hop headers, the Cloudflare edge's `cf-*` headers, and names holding anything but
 * letters, digits, `-` and `_`; the console session's cookie is taken out of `Cookie`. Read with
 * `forEach`: in workerd, iterating a Headers costs about twice as much CPU as one `forEach` over it
 * (bench/lib/profile.mjs, no transform).
 */
export function forwardableRequestHeaders(headers: Headers, config: Config): ForwardableHeaders {
  const connection = headers.get("connection");
  const namedByConnection = new Set(
    connection === null
      ? []
      : connection
          .split(",")
          .map((name) => name.trim().toLowerCase())
          .filter(Boolean),
  );
  // A null-prototype object: a header named __proto__ stays a header. (Headers are lower case.)
  const values: Record<string, string> = Object.create(null);
  let mightHoldReferences = false;
  headers.forEach((value, name) => {
    if (
      !config.ownHeaders.has(name) &&
      !namedByConnection.has(name) &&
      mayTravel(name) &&
      !name.startsWith("cf-") &&
      FORWARDABLE_NAME.test(name)
    ) {
      const forwarded = name === "cookie" ? withoutSessionCookie(value, cookieNameOf(config)) : value;
      if (forwarded === null) return;
      values[name] = forwarded;
      if (!mightHoldReferences && forwarded.includes("{{")) mightHoldReferences = true;
    }
  });
  return { values, mightHoldReferences };
}

/**
 * Headers of a message the vault builds (after detokenization or a transform): a value that is not
 * a string is sent as its JSON text; names the runtime sets itself are left to it. `refuse` makes
 * the error for a name or value HTTP does not allow.
 */
export function headersFrom(values: Record<string, unknown>, refuse: (name: string) => ProblemError): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(values)) {
    if (!mayTravel(name)) continue;
    try {
      headers.set(name, typeof value === "string" ? value : JSON.stringify(value));
    } catch {
      throw refuse(name);
    }
  }
  return headers;
}

/** Whether a header of this name may travel with a message the vault builds. */
function mayTravel(name: string): boolean {
  const lowered = name.toLowerCase();
  return !HOP_BY_HOP.has(lowered) && !RECOMPUTED.has(lowered);
}

/** Response headers as the plain object the response transform receives. */
export function headersObject(headers: Headers): Record<string, string> {
  // Null-prototype, as above: a header named __proto__ stays a header.
  const values: Record<string, string> = Object.create(null);
  // forEach: one call into the runtime, where iterating costs one a header.
  headers.forEach((value, name) => {
    values[name] = value;
  });
  return values;
}
