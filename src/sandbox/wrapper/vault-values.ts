/**
 * What the wrapper takes from the vault. The build script evaluates this module and writes its
 * values into the wrapper as literals: the isolate gets the vault's constants, none of its code.
 * So only plain data (strings, numbers, arrays and objects of them) may be exported here.
 */
import { SANDBOX } from "../../limits";
import { unknownModuleMessage } from "../tenant-code";

export { EGRESS_FAILURE_HEADER } from "../../egress/answer";
export { TOO_DEEP_RESULT } from "../outcome";
export { ALLOWED_BUILTINS, ERRORS_MODULE, ORIGINAL_ERRORS_MODULE, REQUIRE, TICK_GLOBAL } from "../tenant-code";

export const MAX_ALLOCATION_BYTES = SANDBOX.allocationMaxBytes;

/** Stands for the module's name in UNKNOWN_MODULE_MESSAGE; the sandbox's `require` puts the name in. */
export const MODULE_NAME_PLACEHOLDER = "\u0000";
export const UNKNOWN_MODULE_MESSAGE = unknownModuleMessage(MODULE_NAME_PLACEHOLDER);
