/** Apple Pay on the web: domain registrations and merchant sessions (domains.ts, session.ts). */
import { z } from "@hono/zod-openapi";
import { UNKNOWN_MEMBERS_REFUSED as strict } from "../http/schemas";
import { APPLE_PAY_WEB } from "../limits";

/** A host name as Apple registers it: labels of letters, digits and hyphens, at least two, the last not numeric; lower-cased. */
export const Domain = z
  .string()
  .min(1)
  .max(APPLE_PAY_WEB.maxDomainLength)
  .regex(
    /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/i,
    "must be a host name such as shop.example.com: no scheme, path, port, wildcard or IP address",
  )
  .transform((domain) => domain.toLowerCase())
  .openapi({ description: "A fully qualified host name, lower-cased by the vault", example: "shop.example.com" });

export const DomainBody = z.strictObject({ domain: Domain }, strict).openapi("ApplePayDomainRequest");

export const DomainListBody = z
  .strictObject(
    {
      domains: z
        .array(Domain)
        .max(APPLE_PAY_WEB.maxDomainsPerTenant)
        .openapi({
          description: `The tenant's whole list (at most ${APPLE_PAY_WEB.maxDomainsPerTenant}); domains left out are deregistered`,
        }),
    },
    strict,
  )
  .openapi("ApplePayDomainListRequest");

export const DomainsSchema = z
  .object({
    domains: z.array(z.object({ domain: z.string(), status: z.literal("verified") })),
  })
  .openapi("ApplePayDomainRegistrations");
export type DomainsResponse = z.infer<typeof DomainsSchema>;

export const SessionBody = z
  .strictObject(
    {
      validation_url: z
        .string()
        .max(APPLE_PAY_WEB.maxValidationUrlLength)
        .optional()
        .openapi({ description: "The `validationURL` of Apple Pay JS's `onvalidatemerchant` event; Apple's global endpoint when absent" }),
      display_name: z
        .string()
        .min(1)
        .max(APPLE_PAY_WEB.maxDisplayNameLength)
        .openapi({ description: "The store's name as the payment sheet shows it" }),
      domain: Domain.openapi({ description: "The domain of the page asking, one the tenant registered" }),
      merchant_registration_id: z
        .string()
        .optional()
        .openapi({ description: "Not supported: sessions are requested under the vault's platform identity (400 when given)" }),
    },
    strict,
  )
  .openapi("ApplePaySessionRequest");
export type SessionInput = z.infer<typeof SessionBody>;

/**
 * Apple's merchant session, its JSON text as Apple gave it, answered as a JSON string (the original
 * interface's answer type): the page hands `JSON.parse` of it to `completeMerchantValidation`.
 */
export const SessionSchema = z
  .string()
  .openapi("ApplePayMerchantSession", { description: "Apple's merchant session object as JSON text, unchanged" });

export const DOMAIN_EXAMPLE = { domain: "shop.example.com" };
export const DOMAIN_LIST_EXAMPLE = { domains: ["shop.example.com", "pay.example.com"] };
export const DOMAINS_EXAMPLE: DomainsResponse = {
  domains: [
    { domain: "pay.example.com", status: "verified" },
    { domain: "shop.example.com", status: "verified" },
  ],
};
export const SESSION_REQUEST_EXAMPLE = {
  validation_url: "https://apple-pay-gateway.apple.com/paymentservices/paymentSession",
  display_name: "My Store",
  domain: "shop.example.com",
};
export const SESSION_EXAMPLE = JSON.stringify({
  epochTimestamp: 1_700_000_000_000,
  expiresAt: 1_700_003_600_000,
  merchantSessionIdentifier: "SSH…",
  nonce: "5c2d…",
  merchantIdentifier: "9A1B…",
  domainName: "shop.example.com",
  displayName: "My Store",
  signature: "3080…",
});
