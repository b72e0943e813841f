import { holdsPermission, type Principal } from "../auth/access";
import { countAnonymousProxyCall, countKeyRequests } from "../auth/rate-limits";
import { principalForKey, requireAllowedOrigin } from "../auth/service";
import { principalOfSessionRequest } from "../console/service";
import type { RequestContext, ScriptKind, TenantContext } from "../context";
import { detokenizeJson } from "../detokenization/service";
import { EgressRefusedError, EgressTimeoutError, egressRefusal, fetchThroughEgress } from "../egress/policy";
import { ForbiddenError, MethodNotAllowedError, PayloadTooLargeError, UnauthenticatedError, ValidationError } from "../errors";
import { requestBodyWithin, utf8TextOf } from "../http/body";
import { sessionTokenOf } from "../http/console-cookie";
import { HTTP_METHODS } from "../http/router";
import { BODY } from "../limits";
import { ScriptFailedError, type TransformResult } from "../sandbox";
import { mightHoldReferences, parseStructured, type StructuredMediaType, serialiseStructured, structuredMediaTypeOf } from "./bodies";
import { type CallerTarget, callerTarget, destinationFor, proxyKeyInQuery, stepsOut } from "./destination";
import { encryptedRequestsOf } from "./encrypted-header";
import { DestinationResponseError, DestinationTimeoutError } from "./errors";
import { forwardableRequestHeaders, headersFrom, headersObject } from "./headers";
import type { ProxyConfiguration } from "./schema";
import { configurationOf, type InvocableProxy, proxyForKey } from "./service";

/** Statuses whose responses cannot carry a body, whatever the response transform returns. */
const NULL_BODY_STATUSES = new Set([204, 205]);

interface Invocation {
  /** The request acting for the proxy's tenant (the caller's, for an ephemeral proxy). */
  context: TenantContext;
  /** The pre-configured proxy, or null for an ephemeral one (no transforms, no configuration). */
  proxy: InvocableProxy | null;
  destinationUrl: string;
  /** Whose `token:use` detokenization acts with: the caller, the proxy's application, or nobody. */
  detokenizer: Principal | null;
  /** The detokenizer is the caller; false for an open proxy's anonymous partner, who never sees the data. */
  forCaller: boolean;
  target: CallerTarget;
  /** Decrypted once, when the first transform needs it. */
  configuration?: Promise<ProxyConfiguration>;
}

/**
 * The proxy pipeline (docs/architecture.md, "Request flow per area"): find the proxy by its key (or
 * take an ephemeral proxy's destination from `{P}-PROXY-URL`), authenticate, detokenize the body
 * and headers, run the request transform, forward through the egress policy, run the response
 * transform, and return the destination's response. Every failure is thrown as a ProblemError,
 * which the route answers as `proxy_error`; a transform's CustomHttpResponseError is the answer.
 * `destinationAnswered` hears the destination's status as soon as it has one, so that whatever the
 * pipeline answers from then on, the caller can be told the request reached the destination.
 */
export async function invokeProxy(
  context: RequestContext,
  request: Request,
  destinationAnswered: (status: number) => void,
): Promise<Response> {
  const { config } = context;
  if (!(HTTP_METHODS as readonly string[]).includes(request.method)) {
    throw new MethodNotAllowedError([...HTTP_METHODS]);
  }
  const invocation = await authorise(context, request);
  if (stepsOut(invocation.target.path)) {
    throw new ValidationError(
      "The path after /proxy holds a dot segment between encoded separators (%2F, %5C) or with path parameters (;): it could step out of the destination's path",
    );
  }
  try {
    const outgoing = await outgoingRequest(invocation, request);
    const response = await fetchThroughEgress(
      outgoing.url,
      { allowInsecure: config.ALLOW_INSECURE_DESTINATIONS, timeoutMs: config.PROXY_TIMEOUT_MS },
      outgoing.init,
    );
    destinationAnswered(response.status);
    return await answer(invocation, response);
  } catch (error) {
    if (error instanceof EgressTimeoutError) throw new DestinationTimeoutError(config.PROXY_TIMEOUT_MS);
    throw error;
  }
}

/**
 * A proxy key chooses a pre-configured proxy; without one, `{P}-PROXY-URL` (when EPHEMERAL_PROXY is
 * on) makes an ephemeral proxy to that URL. A proxy key wins over the header, which is never
 * forwarded either way.
 */
async function authorise(context: RequestContext, request: Request): Promise<Invocation> {
  const { config } = context;
  const url = new URL(request.url);
  const target = callerTarget(url, config.proxyKeyParam);
  const proxyKey = request.headers.get(config.headers.proxyKey) ?? proxyKeyInQuery(url, config.proxyKeyParam);
  if (proxyKey) return authoriseProxy(context, request, proxyKey, target);
  const proxyUrl = config.EPHEMERAL_PROXY ? request.headers.get(config.headers.proxyUrl) : null;
  if (proxyUrl !== null) return authoriseEphemeral(context, request, proxyUrl, target);
  const prefix = config.HEADER_PREFIX;
  const ephemeral = config.EPHEMERAL_PROXY ? `, or ${prefix}-PROXY-URL with ${prefix}-API-KEY for an ephemeral proxy` : "";
  throw new UnauthenticatedError(
    `A proxy key is required: header ${prefix}-PROXY-KEY or query parameter ${config.proxyKeyParam}${ephemeral}`,
  );
}

async function authoriseProxy(context: RequestContext, request: Request, proxyKey: string, target: CallerTarget): Promise<Invocation> {
  const proxy = await proxyForKey(context, proxyKey);
  if (!proxy) throw new UnauthenticatedError("The proxy key is unknown");
  // The proxy's tenant logs the call; an open proxy's partner is anonymous.
  context.audit.tenantId = proxy.tenantId;
  context.audit.describe({ entityId: proxy.id });
  if (!proxy.requireAuth) {
    // Counted while the tenant is found: both only read, and a call over the limit goes no further.
    const [tenant] = await Promise.all([context.forTenant(proxy.tenantId), countAnonymousProxyCall(context, proxy.id, request.headers)]);
    return { context: tenant, proxy, destinationUrl: proxy.destinationUrl, target, detokenizer: proxy.application, forCaller: false };
  }
  const invocation = { context: await context.forTenant(proxy.tenantId), proxy, destinationUrl: proxy.destinationUrl, target };
  const caller = await callerOf(context, request, "This proxy requires");
  if (caller.tenantId !== proxy.tenantId) {
    throw new UnauthenticatedError("The API key is unknown, revoked, or not valid for this proxy");
  }
  context.audit.actingAs(caller);
  if (!holdsPermission(caller, "token:use")) throw ForbiddenError.missing("token:use");
  return { ...invocation, detokenizer: caller, forCaller: true };
}

/**
 * An ephemeral proxy acts like an authenticated pre-configured proxy without transforms: the
 * caller needs `token:use`, and the destination is judged by the egress policy before any token is
 * read.
 */
async function authoriseEphemeral(context: RequestContext, request: Request, proxyUrl: string, target: CallerTarget): Promise<Invocation> {
  const { config } = context;
  const caller = await callerOf(context, request, "An ephemeral proxy call requires");
  context.audit.actingAs(caller);
  context.audit.describe({ message: "ephemeral" });
  if (!holdsPermission(caller, "token:use")) throw ForbiddenError.missing("token:use");
  if (!isAbsoluteUrl(proxyUrl)) throw ValidationError.field(`headers.${config.headers.proxyUrl}`, "must be an absolute URL");
  const refusal = egressRefusal(proxyUrl, { allowInsecure: config.ALLOW_INSECURE_DESTINATIONS });
  if (refusal !== null) throw new EgressRefusedError(refusal);
  return {
    context: await context.forTenant(caller.tenantId),
    proxy: null,
    destinationUrl: proxyUrl,
    detokenizer: caller,
    forCaller: true,
    target,
  };
}

function isAbsoluteUrl(text: string): boolean {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The principal of the caller's `{P}-API-KEY` (401 when it is missing or unknown), the call counted
 * against the key. Without the header, a console session's cookie stands for its key (the console
 * tries proxies), from the vault's own pages only.
 */
async function callerOf(context: RequestContext, request: Request, requirer: string): Promise<Principal> {
  const { config } = context;
  const apiKey = request.headers.get(config.headers.apiKey);
  const sessionToken = apiKey ? undefined : sessionTokenOf(request, config);
  if (sessionToken) return await principalOfSessionRequest(context, request, sessionToken);
  if (!apiKey) throw new UnauthenticatedError(`${requirer} the ${config.HEADER_PREFIX}-API-KEY header`);
  const caller = await principalForKey(context, apiKey);
  if (!caller) throw new UnauthenticatedError("The API key is unknown, revoked, or not valid for this proxy");
  requireAllowedOrigin(caller, request.headers.get("origin") ?? undefined, new URL(request.url).origin);
  await countKeyRequests(context, caller, request.headers);
  return caller;
}

/**
 * The request for the destination: the caller's headers filtered, references in the body and
 * headers replaced, then the request transform for JSON and form bodies.
 */
async function outgoingRequest(invocation: Invocation, request: Request): Promise<{ url: URL; init: RequestInit }> {
  const { context } = invocation;
  const mediaType = structuredMediaTypeOf(request.headers.get("content-type"));
  const { proxy } = invocation;
  const transformCode = mediaType && proxy ? proxy.requestTransformCode : null;
  const body = await readRequestBody(request, mediaType, transformCode !== null);
  const forwarded = forwardableRequestHeaders(request.headers, context.config);
  const encrypted = await encryptedRequestsOf(context, request, invocation.detokenizer, invocation.forCaller);
  let message: { headers: Record<string, unknown>; body: unknown } = {
    headers: forwarded.values,
    body: body.read ? body.value : undefined,
  };
  // A body left unread and headers without `{{` hold no reference: nothing to detokenize.
  if (body.read || forwarded.mightHoldReferences) {
    message = (await detokenizeJson(context, invocation.detokenizer, message, {
      root: "",
      forCaller: invocation.forCaller,
      encrypted: encrypted ?? undefined,
    })) as typeof message;
  }

  if (proxy && transformCode !== null) {
    const { path, query } = invocation.target;
    const args = { body: message.body, headers: textHeaders(message.headers), method: request.method, path, query };
    message = await runTransform(invocation, proxy, "request-transform", transformCode, args);
  }
  const transformed = transformCode !== null;
  const headers = headersFrom(message.headers, (name) =>
    transformed
      ? new ScriptFailedError("request-transform", `returned a header that HTTP does not allow: ${name}`)
      : ValidationError.field(`headers.${name}`, "is not a valid header value once detokenized"),
  );
  let payload: BodyInit | null = body.read ? serialisedRequestBody(mediaType, message.body) : body.bytes;
  if (request.method === "GET") payload = null;
  if (payload !== null && mediaType && !headers.has("content-type")) headers.set("content-type", mediaType);
  return { url: destinationFor(invocation.destinationUrl, invocation.target), init: { method: request.method, headers, body: payload } };
}

/** A body is read (parsed or decoded) only when it may hold references or a transform needs it. */
type RequestBody = { read: false; bytes: Uint8Array | null } | { read: true; value: unknown };

async function readRequestBody(request: Request, mediaType: StructuredMediaType | null, transformed: boolean): Promise<RequestBody> {
  const bytes = await requestBodyWithin(request, BODY.maxBytes, () => new PayloadTooLargeError(BODY.maxBytes));
  if (!bytes) return transformed ? { read: true, value: null } : { read: false, bytes };
  if (!transformed && !mightHoldReferences(bytes, mediaType)) return { read: false, bytes };
  const refuse = (reason: string) => new ValidationError(`The request body ${reason}`);
  if (mediaType) return { read: true, value: parseStructured(mediaType, bytes, refuse) };
  // A body declared as text is detokenized as text, which needs it to be text; any other body that
  // is not UTF-8 (a binary upload in which `{{` occurs by chance) is forwarded as it is.
  const text = utf8TextOf(bytes);
  if (text !== null) return { read: true, value: text };
  if (declaresText(request.headers.get("content-type"))) throw refuse("holds token references, so it must be valid UTF-8");
  return { read: false, bytes };
}

/** `text/*`, XML, or any type that names a charset. */
function declaresText(contentType: string | null): boolean {
  const type = contentType?.toLowerCase() ?? "";
  return type.startsWith("text/") || type.includes("xml") || type.includes("charset=");
}

function serialisedRequestBody(mediaType: StructuredMediaType | null, body: unknown): string | null {
  if (!mediaType) return typeof body === "string" ? body : JSON.stringify(body);
  return serialiseStructured(mediaType, body, (reason) => new ScriptFailedError("request-transform", `returned ${reason}`));
}

/** Header values as transforms see them: a whole reference to an object is its JSON text. */
function textHeaders(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([name, value]) => [name, typeof value === "string" ? value : JSON.stringify(value)]),
  );
}

/**
 * The destination's response, untouched; on a 2xx JSON or form response with a response
 * transform, the transform's body (serialised in the same type) and headers, with the same status.
 */
async function answer(invocation: Invocation, response: Response): Promise<Response> {
  // fetch hands on any status the destination sent; a Response (the only way to answer) takes 200-599.
  if (response.status < 200 || response.status > 599) {
    throw new DestinationResponseError(`The destination answered with status ${response.status}, which the vault cannot pass on`);
  }
  const proxy = invocation.proxy;
  const code = proxy?.responseTransformCode ?? null;
  const mediaType = structuredMediaTypeOf(response.headers.get("content-type"));
  if (!proxy || code === null || mediaType === null || response.status < 200 || response.status > 299) {
    return new Response(response.body, response);
  }
  const refuse = (reason: string) => new DestinationResponseError(`The destination's response ${reason}`);
  const parsed = parseStructured(mediaType, new Uint8Array(await response.arrayBuffer()), refuse);
  const args = { body: parsed, headers: headersObject(response.headers) };
  const result = await runTransform(invocation, proxy, "response-transform", code, args);
  const headers = headersFrom(
    result.headers,
    (name) => new ScriptFailedError("response-transform", `returned a header that HTTP does not allow: ${name}`),
  );
  // The body is serialised anew, so the destination's encoding of it no longer applies.
  headers.delete("content-encoding");
  const serialised = serialiseStructured(
    mediaType,
    result.body,
    (reason) => new ScriptFailedError("response-transform", `returned ${reason}`),
  );
  if (serialised !== null && !headers.has("content-type")) headers.set("content-type", mediaType);
  const body = NULL_BODY_STATUSES.has(response.status) ? null : serialised;
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** Runs one of the proxy's transforms with its configuration and, as `bt`, its application. */
async function runTransform(
  invocation: Invocation,
  proxy: InvocableProxy,
  kind: Extract<ScriptKind, "request-transform" | "response-transform">,
  code: string,
  args: Record<string, unknown>,
): Promise<TransformResult> {
  invocation.configuration ??= configurationOf(invocation.context, proxy);
  // The sandbox checks a transform's result against the {body, headers} contract of its kind.
  return (await invocation.context.sandbox.run({
    owner: { tenantId: proxy.tenantId, id: proxy.id, kind },
    code,
    input: { args, configuration: await invocation.configuration },
    application: proxy.application,
  })) as TransformResult;
}
