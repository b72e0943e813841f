import { buildApp } from "./app";
import { RequestContext } from "./context";
import type { Bindings } from "./env";
import { purgeIdempotencyRecords } from "./idempotency/service";
import { purgeExpiredCvcs } from "./tokens/cvc";
import { purgeExpiredTokens } from "./tokens/service";

export { Egress } from "./egress/entrypoint";
export { Bridge } from "./sandbox/bridge";

const app = buildApp();

export default {
  fetch: app.fetch,
  async scheduled(controller, env, ctx) {
    const context = new RequestContext(env, `cron/${controller.scheduledTime}`);
    ctx.waitUntil(purgeIdempotencyRecords(context, controller.scheduledTime));
    ctx.waitUntil(purgeExpiredTokens(context, controller.scheduledTime));
    ctx.waitUntil(purgeExpiredCvcs(context, controller.scheduledTime));
  },
} satisfies ExportedHandler<Bindings>;
