/**
 * A call to `/proxy`, answered whole: the pipeline's answer, or its failure as proxy_error, marked
 * with the destination's status, sandboxed and traced.
 */
import type { RequestContext } from "../context";
import { PayloadTooLargeError } from "../errors";
import { cookieNameOf, dropSessionCookieSetters } from "../http/console-cookie";
import { BODY } from "../limits";
import { proxyErrorResponse } from "./errors";
import { invokeProxy } from "./invocation";

/**
 * `{P}-PROXY-DESTINATION-STATUS` is set when the destination answered (a response transform that
 * failed afterwards included: the request did reach it). The header is the vault's: a copy the
 * destination or a transform sent is dropped, as is any Set-Cookie of the console session's cookie.
 * A body over BODY.maxBytes by its Content-Length is a 413 before anything else is read; any body is
 * also bounded as it is read (requestBodyWithin), as the header may not frame it.
 */
export async function answerInvocation(context: RequestContext, request: Request): Promise<Response> {
  const { config } = context;
  let destinationStatus: number | null = null;
  let answer: Response;
  try {
    if (request.body !== null && Number(request.headers.get("content-length") ?? 0) > BODY.maxBytes) {
      throw new PayloadTooLargeError(BODY.maxBytes);
    }
    answer = await invokeProxy(context, request, (status) => {
      destinationStatus = status;
    });
  } catch (error) {
    answer = proxyErrorResponse(error, context.traceId, context.revealed);
  }
  // Every answer here is one the vault built (a copy of the destination's, a problem, a transform's
  // response), so its headers can change.
  // `headers` read once: each read of it is a call into the runtime.
  const { headers } = answer;
  const header = config.headers.proxyDestinationStatus;
  headers.delete(header);
  dropSessionCookieSetters(headers, cookieNameOf(config));
  if (destinationStatus !== null) headers.set(header, String(destinationStatus));
  markSandboxed(headers);
  headers.set(config.headers.traceId, context.traceId);
  // HEAD is refused (405), and its answer, as any HEAD's, has no body.
  return request.method === "HEAD" ? new Response(null, answer) : answer;
}

/**
 * A proxy answers with what a tenant's destination chose, on the vault's origin, which also serves the
 * elements' frames: it must never run there as a page. The sandbox (added to any policy the destination
 * sent) gives it an opaque origin and no script; nosniff keeps another type from being read as one.
 */
export function markSandboxed(headers: Headers): void {
  headers.append("content-security-policy", "sandbox");
  headers.set("x-content-type-options", "nosniff");
}
