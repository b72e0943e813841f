import { ProblemError } from "../errors";

/**
 * The one egress policy for proxy destinations and sandbox `fetch`: HTTPS to public hosts only.
 * It judges the URL as the WHATWG parser normalises it, which is also what `fetch` uses, so the
 * decimal, octal and hex IPv4 spellings are judged as the dotted address they stand for.
 *
 * A host name is not resolved here: the Workers runtime itself refuses to connect to private
 * addresses, so a public name that resolves to one is stopped there.
 */
export interface EgressOptions {
  /** Development setting: loopback destinations (HTTP or HTTPS) are allowed for local testing. */
  allowInsecure: boolean;
}

/** The request was refused by the policy: it never left the vault. */
export class EgressRefusedError extends ProblemError {
  constructor(readonly reason: string) {
    super(403, "Destination Refused", `The destination is not allowed: ${reason}`);
  }
}

/** The destination did not answer within the time limit. */
export class EgressTimeoutError extends ProblemError {
  constructor(timeoutMs: number) {
    super(504, "Gateway Timeout", `The destination did not respond within ${timeoutMs} ms`);
  }
}

/** The destination could not be reached at all (DNS, connection or TLS failure). */
export class EgressUnreachableError extends ProblemError {
  constructor(host: string) {
    super(502, "Bad Gateway", `The destination ${host} could not be reached`);
  }
}

type Range = readonly [network: number, prefixLength: number, label: string];

const IPV4_REFUSED: readonly Range[] = [
  [ipv4(0, 0, 0, 0), 8, "an unspecified address"],
  [ipv4(10, 0, 0, 0), 8, "a private address"],
  [ipv4(100, 64, 0, 0), 10, "a shared (CGNAT) address"],
  [ipv4(127, 0, 0, 0), 8, "a loopback address"],
  [ipv4(169, 254, 0, 0), 16, "a link-local address"],
  [ipv4(172, 16, 0, 0), 12, "a private address"],
  [ipv4(192, 0, 0, 0), 24, "a reserved address"],
  [ipv4(192, 0, 2, 0), 24, "a documentation address"],
  [ipv4(192, 88, 99, 0), 24, "a reserved address"],
  [ipv4(192, 168, 0, 0), 16, "a private address"],
  [ipv4(198, 18, 0, 0), 15, "a reserved address"],
  [ipv4(198, 51, 100, 0), 24, "a documentation address"],
  [ipv4(203, 0, 113, 0), 24, "a documentation address"],
  [ipv4(224, 0, 0, 0), 4, "a multicast address"],
  [ipv4(240, 0, 0, 0), 4, "a reserved address"],
];

/** Inside the global unicast range 2000::/3, the blocks that are not plain public addresses. */
const IPV6_GLOBAL_EXCEPTIONS: readonly (readonly [prefix: bigint, prefixLength: number, label: string])[] = [
  [0x2001n << 112n, 23, "a reserved IPv6 address (it may embed an IPv4 address)"],
  [0x20010db8n << 96n, 32, "a documentation address"],
  [0x2002n << 112n, 16, "a 6to4 address (it embeds an IPv4 address)"],
  [0x3fffn << 112n, 20, "a documentation address"],
];

const SPECIAL_USE_SUFFIXES = ["localhost", "local", "internal", "localdomain", "home.arpa"];

/** Null when the policy allows `url`; otherwise the reason it is refused, for a human. */
export function egressRefusal(url: string | URL, options: EgressOptions): string | null {
  let parsed: URL;
  try {
    // A URL the vault built is judged as it is: parsing it again would give the same URL.
    parsed = url instanceof URL ? url : new URL(url);
  } catch {
    return "it is not a valid absolute URL";
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return `the scheme ${parsed.protocol} is not allowed`;
  if (parsed.username || parsed.password) return "credentials in the URL are not allowed";

  const host = parsed.hostname.replace(/\.$/, "");
  const ownRefusal = hostRefusal(host);
  if (ownRefusal === null) return parsed.protocol === "https:" ? null : "only HTTPS destinations are allowed";
  if (options.allowInsecure && isLoopback(host)) return null;
  return `${host} is ${ownRefusal}`;
}

export interface EgressFetchOptions extends EgressOptions {
  /** Deadline for the whole exchange, body included: the request is aborted when it passes. */
  timeoutMs: number;
}

/**
 * Sends the request (a Request, or a URL and the rest of the request in `init`) if the policy allows
 * it. Redirects are returned to the caller, never followed, so a public destination cannot bounce
 * the vault to a private one. A URL with its `init` is built into a Request once, by `fetch`: the
 * proxy's hot path builds none of its own.
 */
export async function fetchThroughEgress(input: Request | URL, options: EgressFetchOptions, init: RequestInit = {}): Promise<Response> {
  const url = input instanceof URL ? input : input.url;
  const reason = egressRefusal(url, options);
  if (reason !== null) throw new EgressRefusedError(reason);

  // The runtime's own timer: one call, and the error is made only if the deadline passes.
  const deadline = AbortSignal.timeout(options.timeoutMs);
  try {
    return await fetch(input, { ...init, redirect: "manual", signal: deadline });
  } catch {
    if (deadline.aborted) throw new EgressTimeoutError(options.timeoutMs);
    throw new EgressUnreachableError(new URL(url).host);
  }
}

function hostRefusal(host: string): string | null {
  if (host.startsWith("[")) return ipv6Refusal(parseIpv6(host.slice(1, -1)));
  const address = parseDottedIpv4(host);
  if (address !== null) return ipv4Refusal(address);
  if (!host.includes(".")) return host === "localhost" ? "a loopback name" : "not a fully qualified public name";
  const special = SPECIAL_USE_SUFFIXES.find((suffix) => host === suffix || host.endsWith(`.${suffix}`));
  return special ? `under the special-use domain .${special}` : null;
}

function isLoopback(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host === "[::1]") return true;
  const address = parseDottedIpv4(host);
  return address !== null && address >>> 24 === 127;
}

function ipv4Refusal(address: number): string | null {
  const range = IPV4_REFUSED.find(([network, prefixLength]) => inIpv4Range(address, network, prefixLength));
  return range ? range[2] : null;
}

function ipv6Refusal(address: bigint): string | null {
  if (address === 1n) return "a loopback address";
  if (address === 0n) return "an unspecified address";
  if (address >> 125n !== 1n) return ipv6OutsideGlobalLabel(address);
  const exception = IPV6_GLOBAL_EXCEPTIONS.find(([prefix, prefixLength]) => inIpv6Range(address, prefix, prefixLength));
  return exception ? exception[2] : null;
}

/** Everything outside 2000::/3 is refused; the label names the common blocks for a clear message. */
function ipv6OutsideGlobalLabel(address: bigint): string {
  const top16 = Number(address >> 112n);
  if (address >> 32n === 0xffffn) return "an IPv4-mapped address";
  if (address >> 32n === 0x64ff9bn << 64n) return "a NAT64 address (it embeds an IPv4 address)";
  if (address >> 32n === 0n) return "an IPv4-compatible address";
  if ((top16 & 0xfe00) === 0xfc00) return "a unique local (private) address";
  if ((top16 & 0xffc0) === 0xfe80) return "a link-local address";
  if ((top16 & 0xff00) === 0xff00) return "a multicast address";
  return "a reserved IPv6 address (it may embed an IPv4 address)";
}

function ipv4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

function inIpv4Range(address: number, network: number, prefixLength: number): boolean {
  const mask = prefixLength === 0 ? 0 : (0xffffffff << (32 - prefixLength)) >>> 0;
  return (address & mask) >>> 0 === network;
}

function inIpv6Range(address: bigint, prefix: bigint, prefixLength: number): boolean {
  const shift = BigInt(128 - prefixLength);
  return address >> shift === prefix >> shift;
}

/** A dotted-quad IPv4 address as the URL parser serialises it, or null for a name. */
function parseDottedIpv4(host: string): number | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!match) return null;
  const [a, b, c, d] = match.slice(1).map(Number) as [number, number, number, number];
  return ipv4(a, b, c, d);
}

/**
 * An IPv6 address as the URL parser serialises it (lower-case hex groups, at most one `::`,
 * never a dotted IPv4 tail), as a 128-bit integer.
 */
function parseIpv6(text: string): bigint {
  const [head = "", tail] = text.split("::");
  const headGroups = head ? head.split(":") : [];
  const tailGroups = tail ? tail.split(":") : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill("0");
  return [...headGroups, ...zeros, ...tailGroups].reduce((value, group) => (value << 16n) | BigInt(`0x${group}`), 0n);
}
