import type { ScriptLimits } from "../types";

/** The script's limits: the build writes them into the module that imports them, for each script. */
declare const limits: ScriptLimits;
export default limits;
