/**
 * The vault's errors, below everything else: every failure is a ProblemError with its status, and
 * problemOf is the one rule that turns any error into a problem. It imports nothing of the vault.
 */

/** Field path → messages, as returned in the `errors` member of a validation problem. */
export type FieldErrors = Record<string, string[]>;

/**
 * Every failure the service reports is a ProblemError: a status, a title and a detail that
 * become an RFC 7807 body in the single onError handler.
 */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly errors?: FieldErrors,
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
  }

  toProblem(): Problem {
    return {
      type: "about:blank",
      title: this.title,
      status: this.status,
      detail: this.message,
      ...(this.errors ? { errors: this.errors } : {}),
    };
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldErrors;
}

export class ValidationError extends ProblemError {
  constructor(detail: string, errors?: FieldErrors) {
    super(400, "Bad Request", detail, errors);
  }

  /** A validation error about one field: `errors: {path: [message]}`. */
  static field(path: string, message: string): ValidationError {
    return new ValidationError(`${path}: ${message}`, { [path]: [message] });
  }

  /** `summary: path: message, path: message`, with the errors. */
  static summarised(summary: string, errors: FieldErrors): ValidationError {
    return new ValidationError(`${summary}: ${describeFieldErrors(errors)}`, errors);
  }
}

/** Adds the messages to the field's list. */
export function addFieldError(errors: FieldErrors, path: string, ...messages: string[]): void {
  errors[path] = [...(errors[path] ?? []), ...messages];
}

/** `configuration.limit: must be a number, configuration.live: is required`: field errors as one sentence. */
export function describeFieldErrors(errors: FieldErrors): string {
  return Object.entries(errors)
    .map(([path, messages]) => `${path}: ${messages.join("; ")}`)
    .join(", ");
}

export class UnauthenticatedError extends ProblemError {
  constructor(detail = "A valid API key is required") {
    super(401, "Unauthorized", detail);
  }
}

export class ForbiddenError extends ProblemError {
  constructor(detail: string) {
    super(403, "Forbidden", detail);
  }

  static missing(permission: string): ForbiddenError {
    return new ForbiddenError(`This operation requires the permission ${permission}`);
  }
}

export class NotFoundError extends ProblemError {
  /** `why` says what may have become of it, when that helps the caller. */
  constructor(what: string, why?: string) {
    super(404, "Not Found", `${what} was not found${why ? `: ${why}` : ""}`);
  }
}

export class ConflictError extends ProblemError {
  constructor(detail: string, headers?: Record<string, string>) {
    super(409, "Conflict", detail, undefined, headers);
  }

  /** A retry with an idempotency key whose request was processed, but whose answer cannot be made again: `but` says why. */
  static processed(but: string): ConflictError {
    return new ConflictError(`The request with this idempotency key was processed, but ${but}`);
  }
}

export class PayloadTooLargeError extends ProblemError {
  constructor(limitBytes: number) {
    super(413, "Payload Too Large", `The request body exceeds the limit of ${limitBytes} bytes`);
  }
}

export class UnsupportedMediaTypeError extends ProblemError {
  constructor(expected: string[]) {
    super(415, "Unsupported Media Type", `The request body must be sent as ${expected.join(" or ")}`);
  }
}

/** A key over its rate limit (src/auth/rate-limits.ts): nothing was done; Retry-After is the limit's period. */
export class TooManyRequestsError extends ProblemError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, "Too Many Requests", `${detail}; retry in ${retryAfterSeconds} s`, undefined, {
      "Retry-After": String(retryAfterSeconds),
    });
  }
}

export class MethodNotAllowedError extends ProblemError {
  constructor(allowed: string[]) {
    super(405, "Method Not Allowed", `Allowed methods: ${allowed.join(", ")}`, undefined, {
      Allow: allowed.join(", "),
    });
  }
}

/** The tenant's data is being switched to another database: writes wait a moment. */
export class TenantMovingError extends ProblemError {
  constructor(tenantId: string, retryAfterSeconds: number) {
    super(503, "Service Unavailable", `Tenant ${tenantId} is being moved to another database; retry in ${retryAfterSeconds} s`, undefined, {
      "Retry-After": String(retryAfterSeconds),
    });
  }
}

/** A write reached the data database too long after it began (src/db/write-fence.ts): nothing was written. */
export class WriteTooLateError extends ProblemError {
  constructor(maxAgeMs: number) {
    super(
      503,
      "Service Unavailable",
      `The write reached the database more than ${maxAgeMs / 1000} s after it began; nothing was written; retry`,
      undefined,
      {
        "Retry-After": "1",
      },
    );
  }
}

/** The deployment is misconfigured: reported as 500 with the reason, which names no secret value. */
export class ConfigurationError extends ProblemError {
  constructor(detail: string) {
    super(500, "Service Misconfigured", detail);
  }
}

/**
 * An error that is itself the answer (tenant code that chose the whole HTTP response): error
 * handlers send its response instead of a problem.
 */
export abstract class ResponseError extends ProblemError {
  abstract toResponse(): Response;
}

/**
 * The problem an error answers, for every error handler (the API's, /proxy's, the sandbox
 * bridge's): a ProblemError its own problem, logged when it is a 5xx; anything else a 500 that
 * names the trace id, logged with the error. `where` prefixes the log line. Values the request
 * revealed never appear in the problem or the log line.
 */
export function problemOf(
  error: unknown,
  traceId: string,
  where = "",
  revealed?: RevealedValues,
): { problem: Problem; headers?: Record<string, string> } {
  const redact = (text: string) => revealed?.redact(text) ?? text;
  const label = where ? `[${traceId}] ${where}:` : `[${traceId}]`;
  if (error instanceof ProblemError) {
    if (error.status >= 500) console.error(`${label} ${redact(error.message)}`);
    return { problem: revealed ? redactedProblem(error.toProblem(), redact) : error.toProblem(), headers: error.headers };
  }
  console.error(`${label} unexpected error`, redact(error instanceof Error ? (error.stack ?? error.message) : String(error)));
  return { problem: internalProblem(traceId) };
}

function redactedProblem(problem: Problem, redact: (text: string) => string): Problem {
  const { errors, ...rest } = problem;
  return {
    ...rest,
    title: redact(problem.title),
    detail: redact(problem.detail),
    ...(errors
      ? { errors: Object.fromEntries(Object.entries(errors).map(([path, messages]) => [redact(path), messages.map(redact)])) }
      : {}),
  };
}

/** The problem body for an unexpected failure: no internals, only the trace id to look it up. */
export function internalProblem(traceId: string): Problem {
  return {
    type: "about:blank",
    title: "Internal Server Error",
    status: 500,
    detail: `An unexpected error occurred; quote trace id ${traceId} when reporting it`,
  };
}

export const REDACTED = "[redacted]";

/**
 * Shorter values are left alone: a two-digit month would blank out every "12" of a message, and a
 * value that short tells nothing a guess would not.
 */
const MIN_REDACTED_LENGTH = 3;

/** How a request showed a token it detokenized for its caller. */
export interface ShownToken {
  transform: "reveal" | "mask";
  /** The token's cvc deadline when what was shown held its cvc; null otherwise. */
  cvcExpiresAt: number | null;
}

/**
 * Values a request revealed (detokenized data and what its expressions made of it). A request's
 * errors and log lines may be read by someone the data was never revealed to (the partner calling
 * an open proxy, an operator reading logs), so every such value is written as [redacted] there.
 */
export class RevealedValues {
  /** The tokens the request detokenized for its caller, by id: a replay of its answer checks them again. */
  readonly tokens = new Map<string, ShownToken>();
  private readonly values = new Set<string>();
  /** The values longest first, so that a value inside a longer one never leaves part of it behind. */
  private ordered: string[] | null = null;

  /** Every string and number inside the value, as written and as JSON writes it inside a string. */
  add(value: unknown): void {
    if (typeof value === "string" || typeof value === "number") {
      const text = String(value);
      if (text.length < MIN_REDACTED_LENGTH) return;
      this.values.add(text);
      this.values.add(JSON.stringify(text).slice(1, -1));
      this.ordered = null;
    } else if (Array.isArray(value)) {
      for (const item of value) this.add(item);
    } else if (value !== null && typeof value === "object") {
      for (const item of Object.values(value)) this.add(item);
    }
  }

  /** The values themselves, to carry to where the request's work goes on (an async reaction's run): `add` takes them back. */
  list(): string[] {
    return [...this.values];
  }

  redact(text: string): string {
    if (this.values.size === 0) return text;
    this.ordered ??= [...this.values].sort((a, b) => b.length - a.length);
    let redacted = text;
    for (const value of this.ordered) redacted = redacted.replaceAll(value, REDACTED);
    return redacted;
  }
}
