import type { ModuleFormat } from "./tenant-code";

/** One module of the worker script that hosts tenant code. */
export interface ScriptModule {
  name: string;
  format: ModuleFormat;
  source: string;
}

/** Limits baked into the script when it is built: the wrapper's prelude holds them. */
export interface ScriptLimits {
  /** Longest the isolate may stay busy without yielding before tenant code is stopped. */
  cpuMs: number;
}
