import { buildApp } from "./app";
import { databaseOf } from "./db/client";
import type { Bindings } from "./env";
import { purgeIdempotencyRecords } from "./http/idempotency";

const app = buildApp();

export default {
  fetch: app.fetch,
  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(purgeIdempotencyRecords(databaseOf(env)));
  },
} satisfies ExportedHandler<Bindings>;
