import { expect } from "vitest";
import { call, expectProblem, type Reply } from "./harness";

export interface SearchOptions {
  page?: number;
  size?: number;
}

/** POST /tokens/search with the query as given (undefined leaves it out of the body). */
export function search(key: string, query: string | null | undefined, options: SearchOptions = {}): Promise<Reply> {
  return call("POST", "/tokens/search", { key, body: { query, ...options } });
}

/** The ids a successful search returns, in order. */
export async function searchIds(key: string, query: string | null | undefined, options: SearchOptions = {}): Promise<string[]> {
  const reply = await search(key, query, { size: 100, ...options });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.data.map((token: { id: string }) => token.id);
}

/** The problem of a query refused with 400, whose message must name the column. */
export async function refusedQuery(key: string, query: string) {
  const problem = expectProblem(await search(key, query), 400);
  expect(problem.errors?.query?.[0], problem.detail).toMatch(/^column \d+: /);
  return { problem, message: problem.errors!.query![0]! };
}

/** Ids as a set: most rules say which tokens match, not in which order. */
export function sorted(ids: string[]): string[] {
  return [...ids].sort();
}
