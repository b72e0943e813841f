import type { Problem } from "../protocol";

/**
 * How tokens.create and tokenize reject: with the vault's problem (status, title, detail, errors),
 * or one of the same shape when the elements refuse a request before it reaches the vault.
 */
export class ProblemError extends Error implements Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: Record<string, string[]>;

  constructor(problem: Problem) {
    super(problem.detail);
    this.name = "ProblemError";
    this.type = problem.type ?? "about:blank";
    this.title = problem.title;
    this.status = problem.status;
    this.detail = problem.detail;
    if (problem.errors) this.errors = problem.errors;
  }

  static badRequest(detail: string): ProblemError {
    return new ProblemError({ title: "Bad Request", status: 400, detail });
  }
}
