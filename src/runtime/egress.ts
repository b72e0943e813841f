import { WorkerEntrypoint } from "cloudflare:workers";
import { type SignedProps, verifiedProps } from "../crypto/entrypoint-props";
import { Keyring } from "../crypto/keyring";
import { answerThroughEgress, egressFailure } from "../egress/answer";
import type { EgressFetchOptions } from "../egress/policy";
import { type Bindings, configOf } from "../env";
import { ProblemError } from "../errors";

/** The egress was bound with props the vault did not sign: it refuses every request. */
export class UnsignedEgressError extends ProblemError {
  constructor() {
    super(403, "Destination Refused", "The egress refused the request: its props were not made by the vault");
  }
}

/**
 * The only network a sandboxed script has: its `globalOutbound`. The vault sets and signs the
 * props when it loads the script, so neither tenant code nor anything else can relax the policy.
 */
export class Egress extends WorkerEntrypoint<Bindings, SignedProps<EgressFetchOptions>> {
  override async fetch(request: Request): Promise<Response> {
    const options = await verifiedProps<EgressFetchOptions>(Keyring.of(configOf(this.env).keyring), "Egress", this.ctx.props);
    if (!options) return egressFailure(new UnsignedEgressError());
    return answerThroughEgress(request, options);
  }
}
