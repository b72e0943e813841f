import { holdsPermission, type Principal } from "../auth/access";
import { EgressTimeoutError, fetchThroughEgress } from "../egress/policy";
import { configOf, type Bindings, type Config } from "../env";
import { ForbiddenError, MethodNotAllowedError, UnauthenticatedError, ValidationError } from "../http/problem";
import { detokenizeJson } from "../tokens/detokenize";
import {
  mightHoldReferences,
  parseStructured,
  serialiseStructured,
  structuredMediaTypeOf,
  utf8TextOf,
  type StructuredMediaType,
} from "./bodies";
import { callerTarget, destinationFor, proxyKeyInQuery, type CallerTarget } from "./destination";
import { DestinationTimeoutError } from "./errors";
import { forwardableRequestHeaders, mayTravel } from "./headers";
import { proxyForKey, type InvocableProxy } from "./service";

export const INVOCATION_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** Who invokes: the proxy, and the principal whose `token:use` detokenization acts with (null: nobody). */
interface Invocation {
  proxy: InvocableProxy;
  detokenizer: Principal | null;
  target: CallerTarget;
}

/**
 * The proxy pipeline (ARCHITECTURE §7): find the proxy by its key, authenticate, detokenize the body
 * and headers, forward through the egress policy, and return the destination's response as it is.
 * Every failure is thrown as a ProblemError; the route turns it into `proxy_error`.
 */
export async function invokeProxy(env: Bindings, request: Request): Promise<Response> {
  const config = configOf(env);
  if (!(INVOCATION_METHODS as readonly string[]).includes(request.method)) {
    throw new MethodNotAllowedError([...INVOCATION_METHODS]);
  }
  const invocation = await authorise(env, config, request);
  const outgoing = await outgoingRequest(env, config, invocation, request);
  return forward(config, outgoing);
}

async function authorise(env: Bindings, config: Config, request: Request): Promise<Invocation> {
  const url = new URL(request.url);
  const proxyKey = request.headers.get(config.headers.proxyKey) ?? proxyKeyInQuery(url, config.proxyKeyParam);
  if (!proxyKey) {
    throw new UnauthenticatedError(
      `A proxy key is required: header ${config.HEADER_PREFIX}-PROXY-KEY or query parameter ${config.proxyKeyParam}`,
    );
  }
  const apiKey = request.headers.get(config.headers.apiKey);
  const found = await proxyForKey(env, proxyKey, apiKey);
  if (!found) throw new UnauthenticatedError("The proxy key is unknown");
  const { proxy, caller } = found;
  const target = callerTarget(url, config.proxyKeyParam);
  if (!proxy.requireAuth) return { proxy, detokenizer: proxy.application, target };

  if (!apiKey) throw new UnauthenticatedError(`This proxy requires the ${config.HEADER_PREFIX}-API-KEY header`);
  if (!caller) throw new UnauthenticatedError("The API key is unknown, revoked, or not valid for this proxy");
  if (!holdsPermission(caller, "token:use")) throw ForbiddenError.missing("token:use");
  return { proxy, detokenizer: caller, target };
}

/** The request for the destination: headers filtered, references in body and headers replaced. */
async function outgoingRequest(env: Bindings, config: Config, invocation: Invocation, request: Request): Promise<Request> {
  const mediaType = structuredMediaTypeOf(request.headers.get("content-type"));
  const body = await readRequestBody(request, mediaType);
  const detokenized = (await detokenizeJson(
    env,
    invocation.detokenizer,
    { headers: forwardableRequestHeaders(request.headers, config), body: body.read ? body.value : undefined },
    "",
  )) as { headers: Record<string, unknown>; body: unknown };

  return new Request(destinationFor(invocation.proxy.destinationUrl, invocation.target), {
    method: request.method,
    headers: outgoingHeaders(detokenized.headers),
    body: request.method === "GET" ? null : body.read ? serialisedBody(mediaType, detokenized.body) : body.bytes,
  });
}

/** A body is read (parsed or decoded) only when it may hold references; otherwise its bytes travel as they are. */
type RequestBody = { read: false; bytes: Uint8Array | null } | { read: true; value: unknown };

async function readRequestBody(request: Request, mediaType: StructuredMediaType | null): Promise<RequestBody> {
  const bytes = request.body ? new Uint8Array(await request.arrayBuffer()) : null;
  if (!bytes || !mightHoldReferences(bytes, mediaType)) return { read: false, bytes };
  const text = utf8TextOf(bytes);
  if (text === null) {
    if (mediaType) throw new ValidationError(`The request body is not valid UTF-8, as ${mediaType} must be`);
    return { read: false, bytes };
  }
  const refuse = (reason: string) => new ValidationError(`The request body is not valid JSON: ${reason}`);
  return { read: true, value: mediaType ? parseStructured(mediaType, text, refuse) : text };
}

function serialisedBody(mediaType: StructuredMediaType | null, body: unknown): string | null {
  if (mediaType) return serialiseStructured(mediaType, body);
  return typeof body === "string" ? body : JSON.stringify(body);
}

/** Header values that a whole reference turned into JSON are sent as its text. */
function outgoingHeaders(values: Record<string, unknown>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(values)) {
    if (!mayTravel(name)) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    try {
      headers.set(name, text);
    } catch {
      throw ValidationError.field(`headers.${name}`, "is not a valid header value once detokenized");
    }
  }
  return headers;
}

/** Sends the request through the egress policy; the destination's answer comes back untouched. */
async function forward(config: Config, outgoing: Request): Promise<Response> {
  try {
    const response = await fetchThroughEgress(outgoing, {
      allowInsecure: config.ALLOW_INSECURE_DESTINATIONS,
      timeoutMs: config.PROXY_TIMEOUT_MS,
    });
    return new Response(response.body, response);
  } catch (error) {
    if (error instanceof EgressTimeoutError) throw new DestinationTimeoutError(config.PROXY_TIMEOUT_MS);
    throw error;
  }
}
