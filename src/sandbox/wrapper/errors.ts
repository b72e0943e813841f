/**
 * The errors tenant code may throw, and the error a failed `bt` call throws. Tenant code requires
 * this module by the errors module's name (ERRORS_MODULE) or the original product's.
 */
import type { FieldErrors, Problem } from "../../errors";

function errorsOf(detail: unknown): FieldErrors {
  if (typeof detail === "string") return { error: [detail] };
  if (Array.isArray(detail)) return { error: detail.map(String) };
  if (detail instanceof Error) return { error: [detail.message] };
  if (detail !== null && typeof detail === "object") {
    return Object.fromEntries(
      Object.entries(detail).map(([key, value]) => [key, Array.isArray(value) ? value.map(String) : [String(value)]]),
    );
  }
  return { error: [String(detail)] };
}

class ScriptError extends Error {
  declare errors: FieldErrors;

  constructor(name: string, detail: unknown, fallback: string) {
    const errors = errorsOf(detail ?? fallback);
    super(Object.values(errors).flat().join("; "));
    this.name = name;
    this.errors = errors;
  }
}

export class AuthenticationError extends ScriptError {
  constructor(detail?: unknown) {
    super("AuthenticationError", detail, "Authentication failed");
  }
}
export class AuthorizationError extends ScriptError {
  constructor(detail?: unknown) {
    super("AuthorizationError", detail, "Not authorized");
  }
}
export class BadRequestError extends ScriptError {
  constructor(detail?: unknown) {
    super("BadRequestError", detail, "Bad request");
  }
}
export class InvalidPaymentMethodError extends ScriptError {
  constructor(detail?: unknown) {
    super("InvalidPaymentMethodError", detail, "Invalid payment method");
  }
}
export class InvalidReactorConfigurationError extends ScriptError {
  constructor(detail?: unknown) {
    super("InvalidReactorConfigurationError", detail, "Invalid reactor configuration");
  }
}
export class RateLimitError extends ScriptError {
  constructor(detail?: unknown) {
    super("RateLimitError", detail, "Rate limit exceeded");
  }
}
export class ReactorRuntimeError extends ScriptError {
  constructor(detail?: unknown) {
    super("ReactorRuntimeError", detail, "Reactor runtime error");
  }
}
export class ServiceUnavailableError extends ScriptError {
  constructor(detail?: unknown) {
    super("ServiceUnavailableError", detail, "Service unavailable");
  }
}

interface CustomHttpResponse {
  status?: unknown;
  headers?: unknown;
  body?: unknown;
}

export class CustomHttpResponseError extends Error {
  declare status: unknown;
  declare headers: unknown;
  declare body: unknown;

  constructor({ status, headers = {}, body }: CustomHttpResponse = {}) {
    // biome-ignore lint/style/useTemplate: + converts the tenant's status as it always has (valueOf first); a template calls toString
    super("Custom HTTP response " + status);
    this.name = "CustomHttpResponseError";
    this.status = status;
    this.headers = headers;
    this.body = body;
  }
}

/** A failed `bt` call: the vault's problem details. */
export class ApiError extends Error {
  declare status: number;
  declare title: string;
  declare errors: FieldErrors | undefined;

  constructor(problem: Problem) {
    super(`${problem.detail} (${problem.status})`);
    this.name = "ApiError";
    this.status = problem.status;
    this.title = problem.title;
    this.errors = problem.errors;
  }
}

export { ScriptError };
