import { ValidationError } from "../http/problem";

export const INVOCATION_PATH = "/proxy";

/** What the caller asked for below `/proxy`: the sub-path and the raw query without the proxy key. */
export interface CallerTarget {
  /** Raw (still percent-encoded) path after `/proxy`, empty for `/proxy` itself. */
  path: string;
  /** Raw query string with its leading `?`, empty when none is left. */
  query: string;
}

export function callerTarget(url: URL, proxyKeyParam: string): CallerTarget {
  const kept = url.search
    .slice(1)
    .split("&")
    .filter((pair) => pair !== "" && !isParameter(pair, proxyKeyParam));
  return { path: url.pathname.slice(INVOCATION_PATH.length), query: kept.length > 0 ? `?${kept.join("&")}` : "" };
}

/** The proxy key given as query parameter, when the header does not carry it. */
export function proxyKeyInQuery(url: URL, proxyKeyParam: string): string | null {
  for (const [name, value] of url.searchParams) {
    if (name.toLowerCase() === proxyKeyParam) return value;
  }
  return null;
}

function isParameter(pair: string, name: string): boolean {
  const encodedName = pair.split("=", 1)[0]!.replace(/\+/g, " ");
  try {
    return decodeURIComponent(encodedName).toLowerCase() === name;
  } catch {
    return false;
  }
}

/**
 * `destination_url` with the caller's sub-path appended to its path and the caller's query
 * appended to its query. A sub-path that climbs out of the destination's path (`/%2e%2e/`) is
 * refused: the proxy reaches what it was configured for and what lies below it, nothing else.
 */
export function destinationFor(destinationUrl: string, target: CallerTarget): URL {
  const url = new URL(destinationUrl);
  const base = url.pathname.replace(/\/$/, "");
  if (target.path !== "") url.pathname = `${base}${target.path}`;
  if (target.query !== "") url.search = url.search === "" ? target.query : `${url.search}&${target.query.slice(1)}`;
  if (url.pathname !== base && !url.pathname.startsWith(`${base}/`)) {
    throw ValidationError.field("path", "must stay below the path of the proxy's destination URL");
  }
  return url;
}
