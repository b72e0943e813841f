import { createRoute } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { requireContentType } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, problemResponses } from "../http/schemas";
import { APPLE_PAY_WEB } from "../limits";
import { deregisterDomain, listDomains, registerAllDomains, registerDomain } from "./domains";
import { createSession } from "./session";
import {
  DOMAIN_EXAMPLE,
  DOMAIN_LIST_EXAMPLE,
  DOMAINS_EXAMPLE,
  DomainBody,
  DomainListBody,
  DomainsSchema,
  SESSION_EXAMPLE,
  SESSION_REQUEST_EXAMPLE,
  SessionBody,
  SessionSchema,
} from "./web-schema";

const tags = ["Apple Pay"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");
const GATEWAY =
  "Apple is called through the deployment's APPLE_PAY_GATEWAY binding: without one, 503. Apple's refusal (an unverified " +
  "domain, for one) is a 422, and no usable answer from Apple (a redirect, an error, too large or too late) a 502; neither " +
  "records anything.";

const register = createRoute({
  method: "post",
  path: "/apple-pay/domain-registration",
  tags,
  security,
  summary: "Register a domain for Apple Pay on the web",
  description:
    `Needs \`apple-pay:manage\`. The domain must serve the vault's domain association file. A tenant holds at most ` +
    `${APPLE_PAY_WEB.maxDomainsPerTenant} domains (409 beyond); a domain another tenant holds is a 409. Registering a domain ` +
    `the tenant holds already changes nothing. ${GATEWAY}`,
  middleware: [requirePermission("apple-pay:manage"), json] as const,
  request: jsonBody(DomainBody, DOMAIN_EXAMPLE),
  responses: {
    200: jsonContent(DomainsSchema, "The tenant's domains", DOMAINS_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 422, 502, 503),
  },
});

const registerAll = createRoute({
  method: "put",
  path: "/apple-pay/domain-registration",
  tags,
  security,
  summary: "Replace the tenant's Apple Pay domains",
  description:
    "Needs `apple-pay:manage`. The domains not yet registered are registered with Apple first (all or none), then those " +
    `left out are deregistered. A domain another tenant holds is a 409, before anything is sent. ${GATEWAY}`,
  middleware: [requirePermission("apple-pay:manage"), json] as const,
  request: jsonBody(DomainListBody, DOMAIN_LIST_EXAMPLE),
  responses: {
    200: jsonContent(DomainsSchema, "The tenant's domains", DOMAINS_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415, 422, 502, 503),
  },
});

const list = createRoute({
  method: "get",
  path: "/apple-pay/domain-registration",
  tags,
  security,
  summary: "List the tenant's Apple Pay domains",
  description: "Needs `apple-pay:manage`. Reads the vault's own record, so it answers with or without a gateway.",
  middleware: [requirePermission("apple-pay:manage")] as const,
  responses: { 200: jsonContent(DomainsSchema, "The tenant's domains", DOMAINS_EXAMPLE), ...problemResponses(401, 403) },
});

const deregister = createRoute({
  method: "post",
  path: "/apple-pay/domain-deregistration",
  tags,
  security,
  summary: "Deregister a domain from Apple Pay on the web",
  description: `Needs \`apple-pay:manage\`. A domain the tenant does not hold is a 404. ${GATEWAY}`,
  middleware: [requirePermission("apple-pay:manage"), json] as const,
  request: jsonBody(DomainBody, DOMAIN_EXAMPLE),
  responses: { 204: { description: "Deregistered" }, ...problemResponses(400, 401, 403, 404, 413, 415, 422, 502, 503) },
});

const session = createRoute({
  method: "post",
  path: "/apple-pay/session",
  tags,
  security,
  summary: "Request an Apple Pay merchant session",
  description:
    "Needs `apple-pay:session` (public and private keys). `validation_url` must be one of Apple's Apple Pay gateway hosts " +
    "over https at /paymentservices/paymentSession (or /startSession), with no credentials, port, query or fragment, and " +
    `\`domain\` one the tenant registered: otherwise a 400 and nothing is sent. ${GATEWAY} The answer is Apple's session ` +
    "object as JSON text, unchanged, in a JSON string (the page passes `JSON.parse` of it to `completeMerchantValidation`).",
  middleware: [requirePermission("apple-pay:session"), json] as const,
  request: jsonBody(SessionBody, SESSION_REQUEST_EXAMPLE),
  responses: {
    200: jsonContent(SessionSchema, "Apple's merchant session", SESSION_EXAMPLE),
    ...problemResponses(400, 401, 403, 413, 415, 422, 502, 503),
  },
});

/** Mounted before the Apple Pay token routes, whose GET /apple-pay/{id} would otherwise take /apple-pay/domain-registration. */
export const applePayWebRoutes = createRouter()
  .openapi(register, async (c) => c.json(await registerDomain(c.var.context, c.var.principal, c.req.valid("json").domain), 200))
  .openapi(registerAll, async (c) => c.json(await registerAllDomains(c.var.context, c.var.principal, c.req.valid("json").domains), 200))
  .openapi(list, async (c) => c.json(await listDomains(c.var.context), 200))
  .openapi(deregister, async (c) => {
    await deregisterDomain(c.var.context, c.req.valid("json").domain);
    return c.body(null, 204);
  })
  .openapi(session, async (c) => c.json(await createSession(c.var.context, c.req.valid("json")), 200));
