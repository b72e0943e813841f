import { buildApp } from "./app";
import { databaseOf } from "./db/client";
import type { Bindings } from "./env";
import { purgeIdempotencyRecords } from "./http/idempotency";
import { purgeExpiredCvcs } from "./tokens/cvc";
import { purgeExpiredTokens } from "./tokens/service";

export { Egress } from "./egress/entrypoint";
export { Bridge } from "./sandbox/bridge";

const app = buildApp();

export default {
  fetch: app.fetch,
  async scheduled(controller, env, ctx) {
    ctx.waitUntil(purgeIdempotencyRecords(databaseOf(env)));
    ctx.waitUntil(purgeExpiredTokens(env, controller.scheduledTime));
    ctx.waitUntil(purgeExpiredCvcs(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Bindings>;
