/**
 * Converting a token intent into a token (POST /tokens with `token_intent_id`): a private key's create
 * of the intent's type and data, in one batch with the intent's deletion, so the intent converts once.
 */
import { isBrowserKey, type Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { ForbiddenError, NotFoundError } from "../errors";
import { createToken, parseCreateToken } from "../tokens/creation";
import { withoutCvc } from "../tokens/cvc";
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
