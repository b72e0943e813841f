/**
 * Apple Pay on the web's merchant sessions: requested from Apple's validation URL with the vault's
 * client certificate, for a domain the tenant registered, and answered as Apple's opaque JSON: its
 * text as a JSON string, which is what the original interface's SDK reads (its answer type is a string).
 */
import type { TenantContext } from "../context";
import { ValidationError } from "../errors";
import { ownsDomain } from "./domains";
import { ApplePayGatewayError, DEFAULT_VALIDATION_URL, postToApple, requireGateway, VALIDATION_URL_RULE, validationUrlOf } from "./gateway";
import type { SessionInput } from "./web-schema";

export async function createSession(context: TenantContext, input: SessionInput): Promise<string> {
  if (input.merchant_registration_id !== undefined) {
    throw ValidationError.field(
      "merchant_registration_id",
      "is not supported: sessions are requested under the vault's platform identity, with the tenant as the merchant",
    );
  }
  const url = validationUrlOf(input.validation_url ?? DEFAULT_VALIDATION_URL);
  if (!url) throw ValidationError.field("validation_url", VALIDATION_URL_RULE);
  const gateway = requireGateway(context);
  if (!(await ownsDomain(context, input.domain))) {
    throw ValidationError.field("domain", "is not one of the tenant's Apple Pay domains (POST /apple-pay/domain-registration)");
  }
  const text = await postToApple(
    gateway,
    url,
    { merchantIdentifier: context.tenantId, displayName: input.display_name, initiative: "web", initiativeContext: input.domain },
    "merchant session request",
  );
  if (!isJsonObject(text)) throw new ApplePayGatewayError("merchant session request", "its answer is not a JSON object");
  return text;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value);
  } catch {
    return false;
  }
}
