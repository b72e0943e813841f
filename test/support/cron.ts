import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import type { Bindings } from "../../src/env";
import worker from "../../src/index";

/** Runs the vault's scheduled handler (the cron) as of `time`, and waits for all it started. */
export async function runCron(time = Date.now(), bindings: Bindings = env): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: time, cron: "*/15 * * * *" }), bindings, ctx);
  await waitOnExecutionContext(ctx);
}
