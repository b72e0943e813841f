import type { Query } from "./ast";

/*
 * Which term drives a search (compile.ts): the most selective one that an index can look up, so
 * the statement reads its matches instead of walking the tenant's tokens.
 */

/** Most selective first: the driver of an AND is its operand of lowest rank. */
const DRIVER_RANK = {
  id: 0,
  fingerprint: 1,
  data: 2,
  metadata: 3,
  container: 4,
  containerSubtree: 5,
  created_by: 6,
  modified_by: 6,
} as const;

export const UNDRIVABLE = Number.POSITIVE_INFINITY;

export function driverRank(query: Query): number {
  switch (query.kind) {
    case "term":
      if (query.field === "container") return query.subtree ? DRIVER_RANK.containerSubtree : DRIVER_RANK.container;
      return query.field in DRIVER_RANK ? DRIVER_RANK[query.field as keyof typeof DRIVER_RANK] : UNDRIVABLE;
    case "range":
    case "not":
      return UNDRIVABLE;
    case "and":
      return Math.min(...query.operands.map(driverRank));
    case "or":
      return Math.max(...query.operands.map(driverRank));
  }
}

export function bestDriver(operands: Query[]): Query | undefined {
  let best: Query | undefined;
  let bestRank = UNDRIVABLE;
  for (const operand of operands) {
    const rank = driverRank(operand);
    if (rank < bestRank) [best, bestRank] = [operand, rank];
  }
  return best;
}
