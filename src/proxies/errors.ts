import { ProblemError, problemOf, ResponseError, type RevealedValues } from "../errors";

/** The destination did not answer in time (`PROXY_TIMEOUT_MS`). */
export class DestinationTimeoutError extends ProblemError {
  constructor(timeoutMs: number) {
    super(408, "Request Timeout", `The destination did not respond within ${timeoutMs} ms`);
  }
}

/** The destination answered with a body the response transform cannot read. */
export class DestinationResponseError extends ProblemError {
  constructor(detail: string) {
    super(502, "Bad Gateway", detail);
  }
}

/**
 * The error handler of invocation: every failure inside the vault is `{"proxy_error": problem}`,
 * so a caller can always tell the vault's errors from the destination's own; a transform that
 * chose the whole response (ResponseError) gets it.
 */
export function proxyErrorResponse(error: unknown, traceId: string, revealed?: RevealedValues): Response {
  if (error instanceof ResponseError) return error.toResponse();
  const { problem, headers } = problemOf(error, traceId, "proxy", revealed);
  return new Response(JSON.stringify({ proxy_error: problem }), {
    status: problem.status,
    headers: { ...headers, "content-type": "application/json", "cache-control": "no-store" },
  });
}
