import { WorkerEntrypoint } from "cloudflare:workers";
import type { Bindings } from "../env";
import { answerThroughEgress } from "./answer";
import type { EgressFetchOptions } from "./policy";

/**
 * The only network a sandboxed script has: its `globalOutbound`. The vault sets the props when it
 * loads the script, so tenant code cannot relax the policy.
 */
export class Egress extends WorkerEntrypoint<Bindings, EgressFetchOptions> {
  override fetch(request: Request): Promise<Response> {
    return answerThroughEgress(request, this.ctx.props);
  }
}
