import { WorkerEntrypoint } from "cloudflare:workers";
import type { Principal } from "../auth/access";
import { principalForApplication } from "../auth/service";
import { databaseOf } from "../db/client";
import type { Bindings } from "../env";
import { internalProblem, ProblemError, UnauthenticatedError, ValidationError, type Problem } from "../http/problem";
import { validationErrorOf } from "../http/validation";
import { searchTokens } from "../search/service";
import type { SearchRequest } from "../search/schema";
import { TOKEN_ID_MAX_LENGTH } from "../tokens/ids";
import { UpdateTokenBody } from "../tokens/schema";
import { createToken, deleteToken, getToken, parseCreateToken, tokenize, updateToken } from "../tokens/service";

/** Set by the vault when it hands a script its bridge: the principal `bt` acts as. */
export interface BridgeProps {
  tenantId: string;
  applicationId: string;
}

/** Failures travel as problem details: the wrapper rethrows them inside the sandbox as `ApiError`. */
export type BridgeReply = { ok: true; value: unknown } | { ok: false; problem: Problem };


/**
 * The vault as tenant code sees it through `bt`: the token services, acting as the application in
 * the props. Every argument comes from tenant code and is validated here as an API request would be.
 */
export class Bridge extends WorkerEntrypoint<Bindings, BridgeProps> {
  tokenize(payload: unknown): Promise<BridgeReply> {
    return reply(this.env, this.ctx.props, (principal) => tokenize(this.env, principal, payload));
  }

  createToken(input: unknown): Promise<BridgeReply> {
    return reply(this.env, this.ctx.props, (principal) => createToken(this.env, principal, parseCreateToken(input)));
  }

  getToken(id: unknown): Promise<BridgeReply> {
    return reply(this.env, this.ctx.props, (principal) => getToken(this.env, principal, tokenId(id)));
  }

  updateToken(id: unknown, patch: unknown): Promise<BridgeReply> {
    return reply(this.env, this.ctx.props, (principal) => {
      const parsed = UpdateTokenBody.safeParse(patch);
      if (!parsed.success) throw validationErrorOf(parsed.error);
      return updateToken(this.env, principal, tokenId(id), parsed.data);
    });
  }

  deleteToken(id: unknown): Promise<BridgeReply> {
    return reply(this.env, this.ctx.props, async (principal) => {
      await deleteToken(this.env, principal, tokenId(id));
      return null;
    });
  }

  searchTokens(request: unknown): Promise<BridgeReply> {
    return reply(this.env, this.ctx.props, (principal) => searchTokens(this.env, principal, request as SearchRequest));
  }
}

/** Resolves the principal afresh on each call, so a changed or deleted application takes effect at once. */
async function reply(env: Bindings, props: BridgeProps, action: (principal: Principal) => Promise<unknown>): Promise<BridgeReply> {
  try {
    const principal = await principalForApplication(databaseOf(env), props.tenantId, props.applicationId);
    if (!principal) throw new UnauthenticatedError("The application this script acts as no longer exists");
    return { ok: true, value: await action(principal) };
  } catch (error) {
    if (error instanceof ProblemError) return { ok: false, problem: error.toProblem() };
    const traceId = crypto.randomUUID();
    console.error(`[${traceId}] bridge call failed`, error);
    return { ok: false, problem: internalProblem(traceId) };
  }
}

function tokenId(id: unknown): string {
  if (typeof id !== "string" || id.length === 0 || id.length > TOKEN_ID_MAX_LENGTH) {
    throw ValidationError.field("id", `must be a token id (a string of 1-${TOKEN_ID_MAX_LENGTH} characters)`);
  }
  return id;
}
