import { ValidationError } from "../errors";

/** A 400 about the query, naming the column (1-based, counted in characters) where it goes wrong. */
export class InvalidQueryError extends ValidationError {
  constructor(
    readonly column: number,
    readonly reason: string,
  ) {
    super(`query: column ${column}: ${reason}`, { query: [`column ${column}: ${reason}`] });
  }
}
