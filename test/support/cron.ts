import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";

/** Runs the vault's scheduled handler (the cron) as of `time`, and waits for all it started. */
export async function runCron(time = Date.now()): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: time, cron: "*/15 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}
