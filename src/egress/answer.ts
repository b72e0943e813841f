import { ProblemError } from "../errors";
import { type EgressFetchOptions, fetchThroughEgress } from "./policy";

/**
 * Marks a response the egress made itself because it refused or could not complete the request.
 * The sandbox's `fetch` turns such a response into a thrown TypeError carrying the reason.
 */
export const EGRESS_FAILURE_HEADER = "x-vault-egress-failure";

/** The egress's own answer for a request it refused or could not complete. */
export function egressFailure(error: ProblemError): Response {
  return new Response(error.message, {
    status: error.status,
    headers: { [EGRESS_FAILURE_HEADER]: error.message, "content-type": "text/plain" },
  });
}

/**
 * Sends tenant code's request through the egress policy. A refusal or failure is answered, not
 * thrown: an exception escaping an entrypoint or a worker's handler is logged as uncaught.
 */
export async function answerThroughEgress(request: Request, options: EgressFetchOptions): Promise<Response> {
  try {
    return await fetchThroughEgress(request, options);
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    return egressFailure(error);
  }
}
