import type { Problem } from "../protocol";

/*
 * What a frame answers the page when it refuses a request before sending it, or cannot reach the
 * vault: the vault's own problem shape, so the page handles every failure the same way.
 */

export function badRequest(detail: string, errors?: Record<string, string[]>): Problem {
  return { type: "about:blank", title: "Bad Request", status: 400, detail, ...(errors ? { errors } : {}) };
}

/** A refusal of a request before it is sent (or of a value nothing holds), with the problem the page receives. */
export class RefusedRequest extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

/** The problem the page receives for what a request threw: a refusal's own, else the error's message. */
export function problemOf(error: unknown): Problem {
  return error instanceof RefusedRequest ? error.problem : badRequest(String(error));
}

export function unreachable(): Problem {
  return { type: "about:blank", title: "Service Unavailable", status: 503, detail: "The vault could not be reached" };
}

/** `$.card.data`, with members that are not identifiers quoted, as the vault names places in a body. */
export function jsonPath(path: readonly (string | number)[]): string {
  return path.reduce<string>(
    (text, segment) =>
      typeof segment === "number"
        ? `${text}[${segment}]`
        : /^[A-Za-z_$][\w$]*$/.test(segment)
          ? `${text}.${segment}`
          : `${text}[${JSON.stringify(segment)}]`,
    "$",
  );
}
