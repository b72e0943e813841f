/**
 * Converting a token intent into a token (POST /tokens with `token_intent_id`): a private key's create
 * of the intent's type and data, in one batch with the intent's deletion, so the intent converts once.
 */
import { accessTo, isBrowserKey, type Principal, stricter } from "../auth/access";
import type { TenantContext } from "../context";
import { ForbiddenError, NotFoundError } from "../errors";
import { browserRefusedExpressions, createToken, parseCreateToken } from "../tokens/creation";
import { withoutCvc } from "../tokens/cvc";
import { definitionOf } from "../tokens/definition";
import { isAliasExpression } from "../tokens/id-format";
import type { CreatedTokenResponse } from "../tokens/schema";
import { intentData } from "./presentation";
import type { ConvertTokenIntent } from "./schema";
import { GONE } from "./service";
import * as storage from "./storage";

/**
 * A key in a browser holds what its page gave it: converting is the merchant server's decision that the
 * data may become a token, after checking it. Refused before the intent is read, so that the answer is
 * the same whether it exists or not.
 */
const BROWSER_REFUSAL =
  "Token intents are converted into tokens by private keys: a public or session key creates intents, and the merchant's server converts them";

/**
 * The token of the intent's type and data, with the members the request gives (as POST /tokens takes
 * them, under the same rules); a card's cvc is not carried over (the original interface's rule: the
 * card was authorized with it). The token is written in the same batch that deletes the intent, and
 * only if that batch finds it live: of two conversions of one intent, one makes the token, the other
 * is a 404, as are an unknown, expired, deleted or another tenant's intent. The answer shows the token
 * as the caller's token:read rule would too: the caller did not send the data.
 */
export async function convertTokenIntent(
  context: TenantContext,
  principal: Principal,
  { token_intent_id: intentId, ...members }: ConvertTokenIntent,
): Promise<CreatedTokenResponse> {
  if (isBrowserKey(principal)) throw new ForbiddenError(BROWSER_REFUSAL);
  context.requireWritable();
  const unknown = () => new NotFoundError(`Token intent ${intentId}`, GONE);
  const intent = await storage.findLiveIntent(context.db, context.tenantId, intentId, Date.now());
  if (!intent) throw unknown();
  const data = withoutCvc(await intentData(await context.keys(), intent));
  const request = parseCreateToken({ ...members, type: intent.type, data });
  requireSightOfIntentData(principal, request);
  let token: CreatedTokenResponse;
  try {
    token = await createToken(context, principal, request, {
      consuming: (d1, now) => storage.consumeStatements(d1, context.tenantId, intentId, now),
    });
  } catch (error) {
    if (storage.isIntentGoneError(error)) throw unknown();
    throw error;
  }
  context.audit.record({
    entityType: "token-intent",
    entityId: intentId,
    operation: "convert",
    message: `Converted token intent into token ${token.id}`,
    event: {
      type: "token-intent.converted",
      data: { token_intent: { id: intentId, type: intent.type }, token: { id: token.id, type: token.type } },
    },
  });
  return token;
}

/**
 * The expressions of the data a conversion may set (mask, fingerprint expression, search indexes, an
 * alias id): only a caller who would see the data whole, as security.md's rule 1 has it. The caller did
 * not send the data: under a masking token:read rule a mask of its own would show it the whole number,
 * and a search index, fingerprint or alias would let it confirm guesses of it. A 403 naming the
 * members, before anything is written.
 */
function requireSightOfIntentData(principal: Principal, request: ReturnType<typeof parseCreateToken>): void {
  const members = browserRefusedExpressions(request);
  if (typeof request.id === "string" && isAliasExpression(request.id)) members.push("id");
  if (members.length === 0) return;
  const { containers } = definitionOf(request);
  const created = accessTo(principal, "token:create", containers) ?? "redact";
  const read = accessTo(principal, "token:read", containers) ?? "redact";
  if (stricter(created, read) === "reveal") return;
  throw new ForbiddenError(
    `${members.join(", ")} may be set on a converted intent only by a caller whose token:create and token:read rules reveal ` +
      "the data in every container of the token: the caller did not send the data; this caller's rules do not",
  );
}
