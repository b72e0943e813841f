import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { type Problem, problemOf, ResponseError, ValidationError } from "../errors";
import type { AppEnv } from "./context";

/** The API's error handler: problem details (problemOf), or the response an error carries. */
export function handleError(error: Error, c: Context<AppEnv>): Response {
  if (error instanceof ResponseError) return error.toResponse();
  if (error instanceof HTTPException) {
    // Hono's own validators: malformed JSON and similar client errors.
    const problem = new ValidationError(error.message || "Malformed request").toProblem();
    return withTrace(c, problemResponse({ ...problem, status: error.status, title: titleOf(error.status) }));
  }
  const { problem, headers } = problemOf(error, c.var.traceId ?? crypto.randomUUID(), "", c.var.request?.revealed);
  return withTrace(c, problemResponse(problem, headers));
}

function titleOf(status: number): string {
  return status === 413 ? "Payload Too Large" : status === 415 ? "Unsupported Media Type" : "Bad Request";
}

function withTrace(c: Context<AppEnv>, response: Response): Response {
  if (c.var.config && c.var.traceId) response.headers.set(c.var.config.headers.traceId, c.var.traceId);
  return response;
}

/** A problem as an HTTP answer: `application/problem+json` (RFC 7807). */
export function problemResponse(problem: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problem), {
    status: problem.status,
    headers: { "content-type": "application/problem+json", ...headers },
  });
}
