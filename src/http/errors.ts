import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "./context";
import { internalProblem, problemResponse, ProblemError, ValidationError } from "./problem";

/** The one error handler: a ProblemError becomes its problem body; anything else a bare 500. */
export function handleError(error: Error, c: Context<AppEnv>): Response {
  if (error instanceof ProblemError) {
    if (error.status >= 500) console.error(`[${c.var.traceId}] ${error.message}`);
    return withTrace(c, problemResponse(error.toProblem(), error.headers));
  }
  if (error instanceof HTTPException) {
    // Hono's own validators: malformed JSON and similar client errors.
    const problem = new ValidationError(error.message || "Malformed request").toProblem();
    return withTrace(c, problemResponse({ ...problem, status: error.status, title: titleOf(error.status) }));
  }
  const traceId = c.var.traceId ?? crypto.randomUUID();
  console.error(`[${traceId}] unexpected error`, error);
  return withTrace(c, problemResponse(internalProblem(traceId)));
}

function titleOf(status: number): string {
  return status === 413 ? "Payload Too Large" : status === 415 ? "Unsupported Media Type" : "Bad Request";
}

function withTrace(c: Context<AppEnv>, response: Response): Response {
  if (c.var.config && c.var.traceId) response.headers.set(c.var.config.headers.traceId, c.var.traceId);
  return response;
}
