import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { type Problem, problemOf, ResponseError, ValidationError } from "../errors";
import { cookieNameOf, dropSessionCookieSetters } from "./console-cookie";
import type { AppEnv } from "./context";

/** The API's error handler: problem details (problemOf), or the response an error carries. */
export function handleError(error: Error, c: Context<AppEnv>): Response {
  if (error instanceof ResponseError) return tenantCodeAnswer(error.toResponse(), c);
  if (error instanceof HTTPException) {
    // Hono's own validators: malformed JSON and similar client errors.
    const problem = new ValidationError(error.message || "Malformed request").toProblem();
    return withTrace(c, problemResponse({ ...problem, status: error.status, title: titleOf(error.status) }));
  }
  const { problem, headers } = problemOf(error, c.var.traceId ?? crypto.randomUUID(), "", c.var.request?.revealed);
  return withTrace(c, problemResponse(problem, headers));
}

/**
 * An answer tenant code chose (a reactor's CustomHttpResponseError) comes from the vault's origin,
 * the console's: it loses every Set-Cookie of the console's session cookie (the code's author could
 * plant its own tenant's session, and the visitor would type into that tenant), and runs sandboxed
 * should a browser ever render it, as a proxy's answer does.
 */
function tenantCodeAnswer(response: Response, c: Context<AppEnv>): Response {
  if (c.var.config) dropSessionCookieSetters(response.headers, cookieNameOf(c.var.config));
  response.headers.append("content-security-policy", "sandbox");
  response.headers.set("x-content-type-options", "nosniff");
  return response;
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
