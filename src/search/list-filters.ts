import type { Query, Term } from "./ast";
import { type ListTokensV2, metadataFiltersOf } from "./schema";

/**
 * The filters of `GET /v2/tokens` as a query of the search language, their terms ANDed: the list is
 * the compiled search of that query. `request` is the filters in one spelling (metadata lower-cased,
 * as it matches, each pair once, in order), which a cursor of the list is bound to.
 */
export function listQueryOf(filters: ListTokensV2): { query: Query | null; request: unknown } {
  const pairs = metadataFiltersOf(filters).map(([key, value]) => JSON.stringify([key.toLowerCase(), value.toLowerCase()]));
  const metadata = [...new Set(pairs)].sort().map((pair) => JSON.parse(pair) as [string, string]);
  const terms: Term[] = [];
  if (filters.type) terms.push({ kind: "term", field: "type", value: filters.type });
  if (filters.container) terms.push({ kind: "term", field: "container", value: filters.container, subtree: true });
  if (filters.fingerprint) terms.push({ kind: "term", field: "fingerprint", value: filters.fingerprint });
  for (const [key, value] of metadata) terms.push({ kind: "term", field: "metadata", key, value });
  const query = terms.length === 0 ? null : terms.length === 1 ? terms[0]! : { kind: "and" as const, operands: terms };
  const request = { type: filters.type ?? null, container: filters.container ?? null, fingerprint: filters.fingerprint ?? null, metadata };
  return { query, request };
}
