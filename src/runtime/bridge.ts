import { WorkerEntrypoint } from "cloudflare:workers";
import { AUDITED_ROUTES } from "../audit/operations";
import { recordAfterAnswer } from "../audit/recorder";
import type { Principal } from "../auth/access";
import { principalForApplication } from "../auth/service";
import type { TenantContext } from "../context";
import { utf8 } from "../crypto/encoding";
import { type SignedProps, verifiedProps } from "../crypto/entrypoint-props";
import { Keyring } from "../crypto/keyring";
import type { Bindings } from "../env";
import { PayloadTooLargeError, problemOf, UnauthenticatedError, ValidationError } from "../errors";
import { checkBodyText } from "../http/body";
import { validationErrorOf } from "../http/validation";
import { BODY } from "../limits";
import type { BridgeMethod, BridgeProps, BridgeReply } from "../sandbox/bridge-protocol";
import type { SearchRequest } from "../search/schema";
import { searchTokens } from "../search/service";
import { createToken, parseCreateToken, tokenize } from "../tokens/creation";
import { TOKEN_ID_MAX_LENGTH } from "../tokens/id-format";
import { UpdateTokenBody } from "../tokens/schema";
import { deleteToken, getToken } from "../tokens/service";
import { updateToken } from "../tokens/update";
import { requestContextOf } from "./context";

/** What the API answers when these operations succeed, for the audit log; 200 for the others. */
const SUCCESS_STATUS: Record<string, number> = { "POST /tokens": 201, "POST /tokenize": 201, "DELETE /tokens/{id}": 204 };

/**
 * The vault as tenant code sees it through `bt`, acting as the application in the props. Every
 * argument arrives as JSON text (the wrapper serialises it in the tenant's isolate) and is held to
 * the limits of a request body before it is parsed, then validated as an API request would be.
 */
export class Bridge
  extends WorkerEntrypoint<Bindings, SignedProps<BridgeProps>>
  implements Record<BridgeMethod, (...argumentTexts: never[]) => Promise<BridgeReply>>
{
  tokenize(payload: unknown): Promise<BridgeReply> {
    return this.reply("POST /tokenize", [payload], (context, principal, [value]) => tokenize(context, principal, value));
  }

  createToken(input: unknown): Promise<BridgeReply> {
    return this.reply("POST /tokens", [input], (context, principal, [value]) => createToken(context, principal, parseCreateToken(value)));
  }

  getToken(id: unknown): Promise<BridgeReply> {
    return this.reply("GET /tokens/{id}", [id], (context, principal, [value]) => getToken(context, principal, tokenId(value)));
  }

  updateToken(id: unknown, patch: unknown): Promise<BridgeReply> {
    return this.reply("PATCH /tokens/{id}", [id, patch], (context, principal, [idValue, patchValue]) => {
      const parsed = UpdateTokenBody.safeParse(patchValue);
      if (!parsed.success) throw validationErrorOf(parsed.error);
      return updateToken(context, principal, tokenId(idValue), parsed.data);
    });
  }

  deleteToken(id: unknown): Promise<BridgeReply> {
    return this.reply("DELETE /tokens/{id}", [id], async (context, principal, [value]) => {
      await deleteToken(context, principal, tokenId(value));
      return null;
    });
  }

  searchTokens(request: unknown): Promise<BridgeReply> {
    return this.reply("POST /tokens/search", [request], (context, principal, [value]) =>
      searchTokens(context, principal, value as SearchRequest),
    );
  }

  /**
   * Runs the call in a context of its own for the props' tenant, resolving the principal afresh on
   * each call, so a changed or deleted application takes effect at once.
   */
  private async reply(
    operation: keyof typeof AUDITED_ROUTES,
    argumentTexts: unknown[],
    action: (context: TenantContext, principal: Principal, values: unknown[]) => Promise<unknown>,
  ): Promise<BridgeReply> {
    const request = requestContextOf(this.env, crypto.randomUUID());
    // Nothing, not even the audit log, trusts props the vault did not sign.
    const props = await verifiedProps<BridgeProps>(Keyring.of(request.config.keyring), "Bridge", this.ctx.props);
    if (!props) {
      const refused = new UnauthenticatedError("The bridge was not set up by the vault: its props carry no valid signature");
      return { ok: false, problem: problemOf(refused, request.traceId, "bridge call").problem };
    }
    request.audit.tenantId = props.tenantId;
    request.audit.actor = { id: props.applicationId, type: "application" };
    let reply: BridgeReply;
    let entityId: string | null = null;
    try {
      const values = argumentTexts.map(argumentValue);
      if (operation.includes("{id}") && typeof values[0] === "string") entityId = values[0].slice(0, 200);
      const context = await request.forTenant(props.tenantId);
      const principal = await principalForApplication(context, props.applicationId);
      if (!principal) throw new UnauthenticatedError("The application this script acts as no longer exists");
      reply = { ok: true, value: await action(context, principal, values) };
    } catch (error) {
      reply = { ok: false, problem: problemOf(error, request.traceId, "bridge call", request.revealed).problem };
    }
    // Each call is an operation of its own, logged as the API logs it, marked as made by tenant code.
    request.audit.describe({ message: "from reactor code" });
    const status = reply.ok ? (SUCCESS_STATUS[operation] ?? 200) : reply.problem.status;
    const entries = request.audit.conclude({ operation: AUDITED_ROUTES[operation]!, entityId }, status);
    recordAfterAnswer((promise) => this.ctx.waitUntil(promise), request, entries);
    return reply;
  }
}

/**
 * An argument as JSON text, at most as large and as deep as an API request body. As text, a value
 * that shares one object many times (small in the sandbox, huge once written out) costs the
 * tenant's isolate to serialise, not the vault.
 */
function argumentValue(text: unknown): unknown {
  if (typeof text !== "string") throw ValidationError.field("body", "must be sent as JSON text");
  const bytes = utf8.encode(text);
  if (bytes.byteLength > BODY.maxBytes) throw new PayloadTooLargeError(BODY.maxBytes);
  checkBodyText(bytes, "application/json");
  try {
    return JSON.parse(text);
  } catch {
    throw ValidationError.field("body", "must be JSON");
  }
}

function tokenId(id: unknown): string {
  if (typeof id !== "string" || id.length === 0 || id.length > TOKEN_ID_MAX_LENGTH) {
    throw ValidationError.field("id", `must be a token id (a string of 1-${TOKEN_ID_MAX_LENGTH} characters)`);
  }
  return id;
}
