import { createRoute } from "@hono/zod-openapi";
import { requireEitherPermission, requirePermission } from "../auth/middleware";
import { requireContentType } from "../http/middleware";
import { createRouter } from "../http/router";
import { IdParams, jsonBody, jsonContent, problemResponses } from "../http/schemas";
import {
  GOOGLE_PAY_CREATE_EXAMPLE,
  GOOGLE_PAY_REQUEST_EXAMPLE,
  GOOGLE_PAY_RESOURCE_EXAMPLE,
  MERCHANT_KEY_EXAMPLE,
  MERCHANT_KEY_REQUEST_EXAMPLE,
  MERCHANT_REGISTRATION_EXAMPLE,
  MERCHANT_REGISTRATION_REQUEST_EXAMPLE,
} from "./examples";
import {
  CreateGooglePayBody,
  GooglePayCreateSchema,
  GooglePayDeletedSchema,
  GooglePayResourceSchema,
  MerchantKeyBody,
  MerchantKeyParams,
  MerchantKeySchema,
  MerchantParams,
  MerchantRegistrationBody,
  MerchantRegistrationSchema,
} from "./schema";
import * as googlePay from "./service";

const tags = ["Google Pay"];
const security = [{ ApiKey: [] }];
/** The Node SDK 5.7 posts its bodies as `application/json-patch+json`: a JSON body all the same. */
const json = requireContentType("application/json", "application/json-patch+json");

const create = createRoute({
  method: "post",
  path: "/google-pay",
  tags,
  security,
  summary: "Decrypt a Google Pay token (ECv2) into the vault",
  description:
    "Needs `google-pay:create` (private and public keys). Verifies the token's signature chain (Google's root signing keys, the " +
    "intermediate signing key and its expiry, the signature for the recipient `merchant:<merchant_identifier>` of the merchant " +
    "registration), decrypts it with the registration's private keys and checks `messageExpiration`. A PAN_ONLY card becomes a " +
    "token intent (it lives a day); a CRYPTOGRAM_3DS device card becomes a google-pay resource, its cryptogram kept " +
    "`CARD_CVC_RETENTION_S` (an hour by default). Every refusal is a 400 whose `errors.google_payment_data` is a stable code (docs/api.md); " +
    "nothing is stored then.",
  middleware: [requirePermission("google-pay:create"), json] as const,
  request: jsonBody(CreateGooglePayBody, GOOGLE_PAY_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(GooglePayCreateSchema, "The token intent or google-pay resource the card became", GOOGLE_PAY_CREATE_EXAMPLE),
    ...problemResponses(400, 401, 403, 413, 415, 503),
  },
});

const getResource = createRoute({
  method: "get",
  path: "/google-pay/{id}",
  tags,
  security,
  summary: "Read a Google Pay resource (a CRYPTOGRAM_3DS card)",
  description:
    "Needs `google-pay:reveal` (the card whole and, until its retention ends, the 3DS cryptogram) or `google-pay:read` (the " +
    "number masked to its last four, no cryptogram). A PAN_ONLY card is a token intent: read it at `/token-intents/{id}`.",
  middleware: [requireEitherPermission("google-pay:reveal", "google-pay:read")] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(GooglePayResourceSchema, "The resource", GOOGLE_PAY_RESOURCE_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

const deleteResource = createRoute({
  method: "delete",
  path: "/google-pay/{id}",
  tags,
  security,
  summary: "Delete a Google Pay resource",
  description:
    "Needs `google-pay:delete`. The sealed card and cryptogram are deleted with it. Answers the deleted resource's id as a JSON " +
    "string, which the Node SDK 5.7's `googlePay.delete` reads (the docs show a summary object, on which the SDK throws).",
  middleware: [requirePermission("google-pay:delete")] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(GooglePayDeletedSchema, "The deleted resource's id", "b7248b11-acfb-4695-93a9-9609f90ec038"),
    ...problemResponses(400, 401, 403, 404),
  },
});

const registerMerchant = createRoute({
  method: "post",
  path: "/google-pay/merchant-registration",
  tags,
  security,
  summary: "Register a Google Pay merchant",
  description: "Needs `google-pay-merchant:create`. A tenant holds at most 10 registrations (409 beyond).",
  middleware: [requirePermission("google-pay-merchant:create"), json] as const,
  request: jsonBody(MerchantRegistrationBody, MERCHANT_REGISTRATION_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(MerchantRegistrationSchema, "The registration", MERCHANT_REGISTRATION_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415),
  },
});

const getMerchant = createRoute({
  method: "get",
  path: "/google-pay/merchant-registration/{id}",
  tags,
  security,
  summary: "Read a Google Pay merchant registration",
  description: "Needs `google-pay-merchant:read`.",
  middleware: [requirePermission("google-pay-merchant:read")] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(MerchantRegistrationSchema, "The registration", MERCHANT_REGISTRATION_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

const deleteMerchant = createRoute({
  method: "delete",
  path: "/google-pay/merchant-registration/{id}",
  tags,
  security,
  summary: "Delete a Google Pay merchant registration and its private keys",
  description: "Needs `google-pay-merchant:delete`. Its private keys are destroyed: its tokens can no longer be decrypted.",
  middleware: [requirePermission("google-pay-merchant:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

const addKey = createRoute({
  method: "post",
  path: "/google-pay/merchant-registration/{merchant_id}/certificates",
  tags,
  security,
  summary: "Add the merchant's ECv2 private key; it is never answered back",
  description:
    "Needs `google-pay-merchant:create`. `merchant_certificate_data` is the merchant's EC P-256 private key as unencrypted PKCS #8 " +
    "(base64 or PEM); it is stored sealed under the tenant's keys and only its public key's fingerprint is ever shown. A " +
    "registration holds at most 5 keys (409 beyond); every one is tried when a token is decrypted.",
  middleware: [requirePermission("google-pay-merchant:create"), json] as const,
  request: { params: MerchantParams, ...jsonBody(MerchantKeyBody, MERCHANT_KEY_REQUEST_EXAMPLE) },
  responses: {
    201: jsonContent(MerchantKeySchema, "The key's fingerprint", MERCHANT_KEY_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 413, 415),
  },
});

const getKey = createRoute({
  method: "get",
  path: "/google-pay/merchant-registration/{merchant_id}/certificates/{id}",
  tags,
  security,
  summary: "Read a merchant key's fingerprint (never the key)",
  description: "Needs `google-pay-merchant:read`.",
  middleware: [requirePermission("google-pay-merchant:read")] as const,
  request: { params: MerchantKeyParams },
  responses: {
    200: jsonContent(MerchantKeySchema, "The key's fingerprint", MERCHANT_KEY_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

const deleteKey = createRoute({
  method: "delete",
  path: "/google-pay/merchant-registration/{merchant_id}/certificates/{id}",
  tags,
  security,
  summary: "Delete a merchant key",
  description: "Needs `google-pay-merchant:delete`. The private key is destroyed.",
  middleware: [requirePermission("google-pay-merchant:delete")] as const,
  request: { params: MerchantKeyParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

export const googlePayRoutes = createRouter()
  .openapi(create, async (c) => c.json(await googlePay.createFromGooglePay(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(getResource, async (c) => c.json(await googlePay.getGooglePay(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(deleteResource, async (c) => c.json(await googlePay.deleteGooglePay(c.var.context, c.req.valid("param").id), 200))
  .openapi(registerMerchant, async (c) =>
    c.json(await googlePay.registerMerchant(c.var.context, c.var.principal, c.req.valid("json")), 201),
  )
  .openapi(getMerchant, async (c) => c.json(await googlePay.getMerchant(c.var.context, c.req.valid("param").id), 200))
  .openapi(deleteMerchant, async (c) => {
    await googlePay.deleteMerchant(c.var.context, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(addKey, async (c) =>
    c.json(await googlePay.addMerchantKey(c.var.context, c.var.principal, c.req.valid("param").merchant_id, c.req.valid("json")), 201),
  )
  .openapi(getKey, async (c) => {
    const { merchant_id, id } = c.req.valid("param");
    return c.json(await googlePay.getMerchantKey(c.var.context, merchant_id, id), 200);
  })
  .openapi(deleteKey, async (c) => {
    const { merchant_id, id } = c.req.valid("param");
    await googlePay.deleteMerchantKey(c.var.context, merchant_id, id);
    return c.body(null, 204);
  });
