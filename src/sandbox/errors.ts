import type { ScriptKind } from "../context";
import { type FieldErrors, ProblemError, ResponseError } from "../errors";

const KIND_NAMES: Record<ScriptKind, string> = {
  "request-transform": "request transform",
  "response-transform": "response transform",
  reactor: "reactor",
};

export function describeKind(kind: ScriptKind): string {
  return KIND_NAMES[kind];
}

/** Tenant code failed: it threw, could not load, broke its return contract or a limit. */
export class ScriptFailedError extends ProblemError {
  constructor(kind: ScriptKind, detail: string, title = "Script Failed") {
    super(500, title, `The ${describeKind(kind)} ${detail}`);
  }
}

/** Tenant code ran past the wall-clock limit (or never settled). */
export class ScriptTimeoutError extends ProblemError {
  constructor(kind: ScriptKind, limitMs: number) {
    super(504, "Script Timed Out", `The ${describeKind(kind)} did not finish within ${limitMs} ms`);
  }
}

export class ScriptInputTooLargeError extends ProblemError {
  constructor(kind: ScriptKind, limitBytes: number) {
    super(413, "Payload Too Large", `The input of the ${describeKind(kind)} exceeds ${limitBytes} bytes`);
  }
}

/**
 * The errors tenant code may throw from the errors module, by class name, with the status and
 * detail of the original reactor errors page (InvalidReactorConfigurationError, missing from its
 * table, takes the page's 400 "Invalid Reactor Configuration").
 */
export const TENANT_ERRORS: Record<string, { status: number; title: string; detail: string }> = {
  AuthenticationError: { status: 401, title: "Unauthorized", detail: "Authentication Failed" },
  AuthorizationError: { status: 403, title: "Forbidden", detail: "Forbidden" },
  BadRequestError: { status: 400, title: "Bad Request", detail: "Bad Request" },
  InvalidPaymentMethodError: { status: 402, title: "Invalid Payment Method", detail: "Invalid Payment Method" },
  InvalidReactorConfigurationError: { status: 400, title: "Invalid Reactor Configuration", detail: "Invalid Reactor Configuration" },
  RateLimitError: { status: 429, title: "Too Many Requests", detail: "Rate Limit Exceeded" },
  ReactorRuntimeError: { status: 500, title: "Reactor Runtime Error", detail: "Reactor Runtime Error" },
  ServiceUnavailableError: { status: 503, title: "Service Unavailable", detail: "Service Unavailable Error" },
};

/** A typed error thrown by tenant code: its type's status and detail, and its messages as `errors`. */
export class TenantError extends ProblemError {
  constructor(type: { status: number; title: string; detail: string }, errors: FieldErrors) {
    super(type.status, type.title, type.detail, errors);
  }
}

/**
 * Tenant code threw CustomHttpResponseError: the caller returns this response as given, through
 * `toResponse()`. As a ProblemError it still renders sensibly if a caller lets it through.
 */
export class CustomResponseError extends ResponseError {
  declare readonly headers: Record<string, string>;

  constructor(
    status: number,
    headers: Record<string, string>,
    readonly body: unknown,
  ) {
    super(status, "Custom Response", `The script responded with status ${status}`, undefined, headers);
  }

  /** A string body is sent as is; any other body as JSON unless the script set a content type. */
  toResponse(): Response {
    const headers = new Headers(this.headers);
    if (typeof this.body === "string" || this.body === null || this.body === undefined) {
      return new Response(this.body ?? null, { status: this.status, headers });
    }
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
    return new Response(JSON.stringify(this.body), { status: this.status, headers });
  }
}
