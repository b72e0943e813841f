import { principalForKey } from "../../src/auth/service";
import { claimIdempotencyKey, commitMarkOf, controlCommitMarkOf, requestHashOf } from "../../src/idempotency/service";
import { requestContext, tenantContext } from "./context";

/**
 * A request that claimed its idempotency key `claimedAgo` ms ago, as the middleware claims it, and was
 * stopped there: where a crash, a 5xx or a slow attempt would stop it. `rawBody` is the body as sent
 * ("" for none); `marks` says where its write's commit mark goes (`idempotentWrite`: "data",
 * `idempotentControlWrite`: "control", plain `idempotent`: none). The test may go on with its write.
 */
export async function stoppedAfterClaim(
  tenantId: string,
  apiKey: string,
  key: string,
  request: { method: string; path: string; rawBody: string },
  claimedAgo: number,
  marks: "data" | "control" | null,
) {
  const principal = (await principalForKey(requestContext(), apiKey))!;
  const context = await tenantContext(tenantId);
  const outcome = await claimIdempotencyKey(
    context,
    principal,
    {
      key,
      requestHash: await requestHashOf(request.method, request.path, request.rawBody),
      request: `${request.method} ${request.path}`,
      commitsWithWrite: marks !== null,
      marksInControl: marks === "control",
    },
    Date.now() - claimedAgo,
  );
  if (!("claim" in outcome)) throw new Error("the key was not claimed");
  if (marks === "control") context.markControlCommitWith(controlCommitMarkOf(context, outcome.claim));
  if (marks === "data") context.markCommitWith(commitMarkOf(context, outcome.claim));
  return { context, principal, claim: outcome.claim };
}
