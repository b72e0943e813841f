/**
 * What passes between tenant code's `bt` and the vault's Bridge entrypoint (src/runtime/bridge.ts):
 * the props the vault signs, the methods `bt` may call and the shape of a reply.
 */
import type { Problem } from "../errors";

/** Set and signed by the vault when it hands a script its bridge: the principal `bt` acts as. */
export interface BridgeProps {
  tenantId: string;
  applicationId: string;
}

export type BridgeMethod = "tokenize" | "createToken" | "getToken" | "updateToken" | "deleteToken" | "searchTokens";

/** Failures travel as problem details: the wrapper rethrows them inside the sandbox as `ApiError`. */
export type BridgeReply = { ok: true; value: unknown } | { ok: false; problem: Problem };
