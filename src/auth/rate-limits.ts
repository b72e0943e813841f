import type { RequestContext } from "../context";
import { TooManyRequestsError } from "../errors";
import { isBrowserKey, type KeyPrincipal } from "./access";

/*
 * Rate limits per key (docs/operations.md, "Rate limits"), counted by Cloudflare's Workers Rate Limiting bindings
 * (wrangler.toml [[ratelimits]]). A binding keeps its counters per Cloudflare location, and they are
 * approximate: the limits stop floods and guessing, not the last few requests of a window. A key is
 * counted by its id, never by its secret.
 */

/**
 * The period, in seconds, each binding counts over, which a 429 states as Retry-After: a binding
 * cannot tell its own, so wrangler.toml keeps these and leaves only `limit` to the deployment.
 */
export const RATE_LIMIT_PERIODS = { key: 10, publicKey: 60, publicClient: 60 } as const;

/**
 * Counts `requests` by an API key (authentication counts each request once; a tokenize counts each
 * token it creates): against the key; a public key's against the key from the client's address,
 * then its own far lower key-wide limit. Over any limit, a 429 before the request does anything.
 */
export async function countKeyRequests(context: RequestContext, principal: KeyPrincipal, headers: Headers, requests = 1): Promise<void> {
  const key = `key:${principal.credentialId}`;
  if (!isBrowserKey(principal)) {
    if (!(await counted(context.keyRateLimit, key, requests))) throw overKeyLimit();
    return;
  }
  const holder = principal.applicationType === "public" ? "public key" : "session key";
  // The address first, and the key only for what the address may still send: a request its address's limit
  // refuses spends nothing of the budget every shopper shares, so one address cannot use it up.
  if (!(await counted(context.publicClientRateLimit, `${key}@${clientOf(headers)}`, requests))) {
    throw new TooManyRequestsError(`This ${holder} has made too many requests from this address`, RATE_LIMIT_PERIODS.publicClient);
  }
  if (!(await counted(context.publicKeyRateLimit, key, requests))) {
    throw new TooManyRequestsError(`This ${holder} has made too many requests`, RATE_LIMIT_PERIODS.publicKey);
  }
}

/**
 * Counts an anonymous call of a pre-configured proxy against its key from the client's address:
 * nothing else tells its callers apart, and one of them must not use up the calls of all the others.
 */
export async function countAnonymousProxyCall(context: RequestContext, proxyId: string, headers: Headers): Promise<void> {
  if (!(await counted(context.keyRateLimit, `proxy:${proxyId}@${clientOf(headers)}`, 1))) {
    throw new TooManyRequestsError("This proxy key has been called too often from this address", RATE_LIMIT_PERIODS.key);
  }
}

function overKeyLimit(): TooManyRequestsError {
  return new TooManyRequestsError("This API key has made too many requests", RATE_LIMIT_PERIODS.key);
}

/** Counts `requests` under the key; false when any of them is over the limit. */
async function counted(limiter: RateLimit, key: string, requests: number): Promise<boolean> {
  if (requests === 1) return (await limiter.limit({ key })).success;
  const outcomes = await Promise.all(Array.from({ length: requests }, () => limiter.limit({ key })));
  return outcomes.every((outcome) => outcome.success);
}

/**
 * The client as counted: its address, an IPv6 address cut to its /64, which one client commonly
 * holds whole. Behind Cloudflare's Pseudo IPv4, CF-Connecting-IP is a made-up IPv4 address per IPv6
 * address and the real one is CF-Connecting-IPv6, which wins. A request that did not come through
 * Cloudflare's edge has no address: all such requests count as one client.
 */
function clientOf(headers: Headers): string {
  const address = headers.get("cf-connecting-ipv6") ?? headers.get("cf-connecting-ip");
  if (address === null) return "unknown";
  if (!address.includes(":")) return address;
  // An IPv4 address mapped into IPv6 (::ffff:192.0.2.1) is that IPv4 address; another dotted tail is part of its /64.
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  const [head = "", tail] = address.split("::");
  const groups = head === "" ? [] : head.split(":");
  if (tail !== undefined) {
    const tailGroups = tail === "" ? [] : tail.split(":");
    groups.push(...Array<string>(Math.max(0, 8 - groups.length - tailGroups.length)).fill("0"), ...tailGroups);
  }
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(":")}::/64`;
}
