import { WorkerEntrypoint } from "cloudflare:workers";
import type { Bindings } from "../env";
import { ProblemError } from "../http/problem";
import { type EgressFetchOptions, fetchThroughEgress } from "./policy";

/**
 * Marks a response the egress made itself because it refused or could not complete the request.
 * The sandbox's `fetch` turns such a response into a thrown TypeError carrying the reason.
 */
export const EGRESS_FAILURE_HEADER = "x-vault-egress-failure";

/**
 * The only network a sandboxed script has: its `globalOutbound`. The vault sets the props when it
 * loads the script, so tenant code cannot relax the policy.
 */
export class Egress extends WorkerEntrypoint<Bindings, EgressFetchOptions> {
  override async fetch(request: Request): Promise<Response> {
    try {
      return await fetchThroughEgress(request, this.ctx.props);
    } catch (error) {
      // Answered, not thrown: an exception escaping an entrypoint is logged as uncaught.
      if (!(error instanceof ProblemError)) throw error;
      return new Response(error.message, {
        status: error.status,
        headers: { [EGRESS_FAILURE_HEADER]: error.message, "content-type": "text/plain" },
      });
    }
  }
}
