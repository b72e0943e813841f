import { ProblemError } from "../errors";
import type { EgressFetchOptions } from "./policy";

/**
 * What the vault and the dispatch namespace's outbound worker (outbound-worker.ts) agree on. The
 * namespace hands the outbound worker the parameters the vault passed to `DISPATCHER.get`, each
 * as `env.<name>` for the names its binding declares: `outbound = { service = OUTBOUND_SERVICE,
 * parameters = [OUTBOUND_PARAMETER] }`.
 */
export const OUTBOUND_SERVICE = "token-vault-egress";
export const OUTBOUND_PARAMETER = "EGRESS";

/**
 * A name that never resolves (RFC 6761): only an outbound worker can answer it, so an answer
 * proves tenant code's fetches pass through one.
 */
export const EGRESS_CHECK_URL = "https://egress-check.invalid/";

export interface OutboundParameters extends EgressFetchOptions {
  /** Set when the vault checks the outbound worker: its answer at EGRESS_CHECK_URL. */
  check?: string;
}

/** The outbound worker got no usable parameters: it refuses everything rather than guess a policy. */
export class OutboundUnconfiguredError extends ProblemError {
  constructor() {
    super(
      403,
      "Destination Refused",
      `The egress refused the request: the outbound worker got no valid ${OUTBOUND_PARAMETER} parameter from the vault`,
    );
  }
}

/** The parameters as the vault sends them, or null for anything else. */
export function outboundParametersOf(value: unknown): OutboundParameters | null {
  if (value === null || typeof value !== "object") return null;
  const { allowInsecure, timeoutMs, check } = value as Record<string, unknown>;
  if (typeof allowInsecure !== "boolean") return null;
  if (typeof timeoutMs !== "number" || !Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) return null;
  if (check !== undefined && typeof check !== "string") return null;
  return { allowInsecure, timeoutMs, ...(check === undefined ? {} : { check }) };
}
