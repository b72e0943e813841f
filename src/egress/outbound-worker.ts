/**
 * The dispatch namespace's outbound worker (SANDBOX_HOST=dispatch): every fetch tenant code makes
 * arrives here and passes the egress policy, as the Egress entrypoint applies it under the Worker
 * Loader. A worker of its own (src/egress/wrangler.toml), without bindings or secrets: the
 * namespace names its outbound worker by service, and tenant requests never reach the vault.
 */
import { answerThroughEgress, egressFailure } from "./answer";
import { EGRESS_CHECK_URL, OUTBOUND_PARAMETER, OutboundUnconfiguredError, outboundParametersOf } from "./outbound";

export default {
  async fetch(request, env) {
    const parameters = outboundParametersOf(env[OUTBOUND_PARAMETER]);
    if (parameters === null) return egressFailure(new OutboundUnconfiguredError());
    if (request.url === EGRESS_CHECK_URL) return new Response(parameters.check ?? "");
    return answerThroughEgress(request, parameters);
  },
} satisfies ExportedHandler<Record<string, unknown>>;
