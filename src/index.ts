/** The worker: `/proxy` calls and the Hono app for `fetch`, the cron and queue handlers, and the entrypoints tenant code reaches. */
import { buildApp } from "./app";
import type { Bindings } from "./env";
import { isInvocationPath, rawPathOf } from "./proxies/destination";
import { queue, scheduled } from "./runtime/handlers";
import { answerProxyCall } from "./runtime/proxy-calls";

export { Bridge } from "./runtime/bridge";
export { Egress } from "./runtime/egress";

const app = buildApp();

function fetch(request: Request, env: Bindings, ctx: ExecutionContext): Response | Promise<Response> {
  const path = rawPathOf(request.url);
  return isInvocationPath(path) ? answerProxyCall(request, env, ctx, path) : app.fetch(request, env, ctx);
}

export default { fetch, scheduled, queue } satisfies ExportedHandler<Bindings>;
