import type { Config } from "../env";
import type { ProblemError } from "../errors";

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

/**
 * The caller's headers as the destination should see them: without any of the vault's own headers,
 * hop-by-hop headers, the Cloudflare edge's `cf-*` headers, and names holding anything but
 * letters, digits, `-` and `_`.
 */
export function forwardableRequestHeaders(headers: Headers, config: Config): Record<string, string> {
  const namedByConnection = new Set(
    (headers.get("connection") ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  // A null-prototype object: a header named __proto__ stays a header. (Headers are lower case.)
  const forwarded: Record<string, string> = Object.create(null);
  for (const [name, value] of headers) {
    if (
      !config.ownHeaders.has(name) &&
      !namedByConnection.has(name) &&
      mayTravel(name) &&
      !name.startsWith("cf-") &&
      FORWARDABLE_NAME.test(name)
    ) {
      forwarded[name] = value;
    }
  }
  return forwarded;
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
  return Object.fromEntries(headers);
}
