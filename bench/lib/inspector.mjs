// The V8 CPU profile of the vault's isolate, taken through workerd's inspector (not a benchmark:
// bench/run.mjs runs only bench/*.mjs). bench/lib/profile.mjs prints where the time goes; the
// benchmarks take only how much of it there is a call.
import { inspectVault } from "../../scripts/inspector.mjs";

/** Every sample counts as this long (see busyMicros). */
export const SAMPLING_INTERVAL_US = 100;

/**
 * The vault isolate's profile while `run` runs: `inspectorUrl` is the inspector of the vault's
 * Miniflare (startLocalVault's inspectorUrl). Answers the profile and the inspector target profiled.
 */
export async function profileVault(inspectorUrl, run, worker = "vault") {
  const inspector = await inspectVault(inspectorUrl, worker);
  try {
    await inspector.call("Profiler.enable");
    await inspector.call("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
    await inspector.call("Profiler.start");
    await run();
    const { profile } = await inspector.call("Profiler.stop");
    await inspector.call("Profiler.disable");
    return { profile, target: inspector.target, targets: inspector.targets };
  } finally {
    inspector.close();
  }
}

/**
 * The profile's busy time, in microseconds: every sample not idle, each counted as one sampling
 * interval. On a loaded machine the sampler is starved and the recorded gaps between samples (often
 * milliseconds) measure the scheduler, not the code; a starved sampler takes fewer samples, so
 * this errs low there.
 */
export function busyMicros(profile) {
  const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === "(idle)").map((node) => node.id));
  return profile.samples.filter((id) => !idle.has(id)).length * SAMPLING_INTERVAL_US;
}
