/**
 * Proxy calls, answered outside the API's router and middleware: the vault's hot path does only
 * what a call to `/proxy` needs of them (its trace id, context, answer and audit entry), which the
 * router's match and middleware chain cost a call several times over (docs/decisions.md, "Proxy
 * calls outside the router").
 */
import { auditedOperation } from "../audit/operations";
import { recordAfterAnswer } from "../audit/recorder";
import { type Bindings, configOf } from "../env";
import { answerInvocation, markSandboxed } from "../proxies/calls";
import { INVOCATION_PATH } from "../proxies/destination";
import { proxyErrorResponse } from "../proxies/errors";
import { requestContextOf } from "./context";
import { traceIdOf } from "./middleware";

/** A call whose path (as sent, not decoded) is `/proxy` or below it. */
export async function answerProxyCall(request: Request, env: Bindings, ctx: ExecutionContext, path: string): Promise<Response> {
  let config: ReturnType<typeof configOf>;
  try {
    config = configOf(env);
  } catch (error) {
    // Its refusal is a /proxy answer too, on the vault's origin.
    const refusal = proxyErrorResponse(error, crypto.randomUUID());
    markSandboxed(refusal.headers);
    return refusal;
  }
  const context = requestContextOf(env, traceIdOf(request.headers.get(config.headers.traceId)));
  const answer = await answerInvocation(context, request);
  const entries = context.audit.conclude(auditedOperation("ALL", INVOCATION_PATH, path), answer.status);
  recordAfterAnswer((promise) => ctx.waitUntil(promise), context, entries);
  return answer;
}
