export const INVOCATION_PATH = "/proxy";

/** `/proxy` and everything below it: the routes that invoke proxies. */
export function isInvocationPath(path: string): boolean {
  return path === INVOCATION_PATH || path.startsWith(`${INVOCATION_PATH}/`);
}

/**
 * The path of a request's URL as sent (not decoded), read without parsing the URL: what a proxy call
 * is told by. A path that spells `/proxy` with escapes (`/%70roxy`) is not one.
 */
export function rawPathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const end = url.slice(start).search(/[?#]/);
  return end < 0 ? url.slice(start) : url.slice(start, start + end);
}

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

/** A separator a destination may decode before it resolves dot segments: `/` or `\\`, sent encoded. */
const ENCODED_SEPARATOR = /%2f|%5c/i;
const SEPARATOR = /\/|%2f|%5c/i;
/** `.` or `..`, each dot maybe encoded, maybe followed by `;` path parameters. */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}(?:;.*)?$/i;

/**
 * Whether the caller's sub-path holds a dot segment once its encoded separators are read as
 * separators (`/..%2Fadmin`) or its segments' path parameters dropped (`/..;/admin`). The URL parser
 * removed every dot segment between plain slashes (`..`, `%2e%2e`), but not these: a destination that
 * decodes `%2F` before resolving dot segments, or drops `;params` first as servlet containers
 * (Tomcat) do, would serve a path above its configured one.
 */
export function stepsOut(path: string): boolean {
  return (ENCODED_SEPARATOR.test(path) || path.includes(";")) && path.split(SEPARATOR).some((segment) => DOT_SEGMENT.test(segment));
}

/**
 * `destination_url` with the caller's sub-path appended to its path and the caller's query
 * appended to its query. The URL parser already removed dot segments (`..`, `%2e%2e`) from the
 * caller's path, and one cut out by encoded separators or path parameters was refused (stepsOut),
 * so the result lies below the destination's path however the destination decodes it.
 */
export function destinationFor(destinationUrl: string, target: CallerTarget): URL {
  const url = new URL(destinationUrl);
  if (target.path !== "") url.pathname = `${url.pathname.replace(/\/$/, "")}${target.path}`;
  if (target.query !== "") url.search = url.search === "" ? target.query : `${url.search}&${target.query.slice(1)}`;
  return url;
}
