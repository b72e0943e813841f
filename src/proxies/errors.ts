import type { Context } from "hono";
import type { AppEnv } from "../http/context";
import { internalProblem, ProblemError, type Problem } from "../http/problem";

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
 * so a caller can always tell the vault's errors from the destination's own.
 */
export function proxyErrorResponse(error: Error, c: Context<AppEnv>): Response {
  let problem: Problem;
  let headers: Record<string, string> = {};
  if (error instanceof ProblemError) {
    problem = error.toProblem();
    headers = error.headers ?? {};
    if (error.status >= 500) console.error(`[${c.var.traceId}] proxy: ${error.message}`);
  } else {
    console.error(`[${c.var.traceId}] proxy: unexpected error`, error);
    problem = internalProblem(c.var.traceId);
  }
  return new Response(JSON.stringify({ proxy_error: problem }), {
    status: problem.status,
    headers: { ...headers, "content-type": "application/json" },
  });
}
