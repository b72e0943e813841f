import { createRoute } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { requireContentType } from "../http/middleware";
import { createRouter } from "../http/router";
import { IdParams, jsonBody, jsonContent, optionalJsonBody, problemResponses } from "../http/schemas";
import {
  APPLE_PAY_CREATED_EXAMPLE,
  APPLE_PAY_REQUEST_EXAMPLE,
  APPLE_PAY_TOKEN_EXAMPLE,
  CERTIFICATES_EXAMPLE,
  CERTIFICATES_REQUEST_EXAMPLE,
  MERCHANT_EXAMPLE,
  MERCHANT_REQUEST_EXAMPLE,
} from "./examples";
import {
  ApplePayBody,
  ApplePayCreatedSchema,
  ApplePayTokenSchema,
  CertificateParams,
  CertificatesBody,
  CertificatesSchema,
  MerchantParams,
  MerchantRegistrationBody,
  MerchantSchema,
} from "./schema";
import * as applePay from "./service";
import { deleteApplePayToken, getApplePayToken } from "./tokens";

const tags = ["Apple Pay"];
const security = [{ ApiKey: [] }];
const json = requireContentType("application/json");

const create = createRoute({
  method: "post",
  path: "/apple-pay",
  tags,
  security,
  summary: "Decrypt an Apple Pay payment token (EC_v1) into an Apple Pay token",
  description:
    "Needs `apple-pay:create` (public and private keys). The token's signature must verify: a detached CMS signature over the " +
    "ephemeral key, data, transaction id and application data, by Apple's leaf (OID 1.2.840.113635.100.6.29) under its " +
    "intermediate (1.2.840.113635.100.6.2.14) under Apple Root CA - G3, signed at most 5 minutes ago (1 minute ahead for clock " +
    "skew). The data is then decrypted with the payment processing certificate of the tenant whose public key `publicKeyHash` " +
    "names, and the device card is kept sealed as an Apple Pay token until `expires_at` (the end of the card's expiration " +
    "month when absent), its online payment cryptogram and ECI for CARD_CVC_RETENTION_S only. Any refusal is a 400 and nothing " +
    "is stored.",
  middleware: [requirePermission("apple-pay:create"), json] as const,
  request: jsonBody(ApplePayBody, APPLE_PAY_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(ApplePayCreatedSchema, "The decrypted token, kept as a token intent", APPLE_PAY_CREATED_EXAMPLE),
    ...problemResponses(400, 401, 403, 413, 415, 503),
  },
});

const get = createRoute({
  method: "get",
  path: "/apple-pay/{id}",
  tags,
  security,
  summary: "Read an Apple Pay token",
  description:
    "Needs `apple-pay:read` (private keys). `data` holds the card with all but the last four digits masked; with " +
    "`apple-pay:reveal` too, the whole card and, until its retention ends, the cryptogram and ECI (`authentication`).",
  middleware: [requirePermission("apple-pay:read")] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(ApplePayTokenSchema, "The Apple Pay token", APPLE_PAY_TOKEN_EXAMPLE),
    ...problemResponses(400, 401, 403, 404),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/apple-pay/{id}",
  tags,
  security,
  summary: "Delete an Apple Pay token",
  description: "Needs `apple-pay:delete` (private keys). The card and cryptogram are deleted with it.",
  middleware: [requirePermission("apple-pay:delete")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

const registerMerchant = createRoute({
  method: "post",
  path: "/apple-pay/merchant-registration",
  tags,
  security,
  summary: "Register an Apple Pay merchant",
  description: "Needs `apple-pay:manage`. A tenant holds at most 20 merchant registrations (409 beyond).",
  middleware: [requirePermission("apple-pay:manage"), json] as const,
  request: optionalJsonBody(MerchantRegistrationBody, MERCHANT_REQUEST_EXAMPLE),
  responses: {
    201: jsonContent(MerchantSchema, "The merchant registration", MERCHANT_EXAMPLE),
    ...problemResponses(400, 401, 403, 409, 413, 415),
  },
});

const getMerchant = createRoute({
  method: "get",
  path: "/apple-pay/merchant-registration/{id}",
  tags,
  security,
  summary: "Read an Apple Pay merchant registration",
  description: "Needs `apple-pay:manage`.",
  middleware: [requirePermission("apple-pay:manage")] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(MerchantSchema, "The merchant registration", MERCHANT_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const deleteMerchant = createRoute({
  method: "delete",
  path: "/apple-pay/merchant-registration/{id}",
  tags,
  security,
  summary: "Delete an Apple Pay merchant registration and its certificates",
  description: "Needs `apple-pay:manage`. Its certificates' private keys are destroyed: tokens encrypted to them no longer decrypt.",
  middleware: [requirePermission("apple-pay:manage")] as const,
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

const registerCertificates = createRoute({
  method: "post",
  path: "/apple-pay/merchant-registration/{merchantId}/certificates",
  tags,
  security,
  summary: "Register a payment processing certificate and its private key",
  description:
    "Needs `apple-pay:manage`. `payment_processor_certificate_data` is the certificate Apple issued with its EC P-256 private " +
    "key, in base64: a PKCS #12 file (PBES2 with AES, OpenSSL 3's default; at most 100,000 iterations) opened with " +
    "`payment_processor_certificate_password`, or PEM text with the certificate and an unencrypted PKCS #8 key. The key must be " +
    "the certificate's, and the certificate must carry Apple's merchant id extension. The key is kept sealed under the tenant's " +
    "keys and never answered. A registration holds at most 5 (409 beyond).",
  middleware: [requirePermission("apple-pay:manage"), json] as const,
  request: { params: MerchantParams, ...jsonBody(CertificatesBody, CERTIFICATES_REQUEST_EXAMPLE) },
  responses: {
    201: jsonContent(CertificatesSchema, "The certificate, without its key", CERTIFICATES_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 409, 413, 415),
  },
});

const getCertificates = createRoute({
  method: "get",
  path: "/apple-pay/merchant-registration/{merchantId}/certificates/{id}",
  tags,
  security,
  summary: "Read a payment processing certificate's facts (never its key)",
  description: "Needs `apple-pay:manage`.",
  middleware: [requirePermission("apple-pay:manage")] as const,
  request: { params: CertificateParams },
  responses: { 200: jsonContent(CertificatesSchema, "The certificate", CERTIFICATES_EXAMPLE), ...problemResponses(400, 401, 403, 404) },
});

const deleteCertificates = createRoute({
  method: "delete",
  path: "/apple-pay/merchant-registration/{merchantId}/certificates/{id}",
  tags,
  security,
  summary: "Delete a payment processing certificate and its private key",
  description: "Needs `apple-pay:manage`. Tokens encrypted to its key no longer decrypt.",
  middleware: [requirePermission("apple-pay:manage")] as const,
  request: { params: CertificateParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses(400, 401, 403, 404) },
});

export const applePayRoutes = createRouter()
  .openapi(create, async (c) => c.json(await applePay.createApplePayToken(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(get, async (c) => c.json(await getApplePayToken(c.var.context, c.var.principal, c.req.valid("param").id), 200))
  .openapi(remove, async (c) => {
    await deleteApplePayToken(c.var.context, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(registerMerchant, async (c) => c.json(await applePay.registerMerchant(c.var.context, c.var.principal, c.req.valid("json")), 201))
  .openapi(getMerchant, async (c) => c.json(await applePay.getMerchant(c.var.context, c.req.valid("param").id), 200))
  .openapi(deleteMerchant, async (c) => {
    await applePay.deleteMerchant(c.var.context, c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(registerCertificates, async (c) => {
    const { merchantId } = c.req.valid("param");
    return c.json(await applePay.registerCertificates(c.var.context, c.var.principal, merchantId, c.req.valid("json")), 201);
  })
  .openapi(getCertificates, async (c) => {
    const { merchantId, id } = c.req.valid("param");
    return c.json(await applePay.getCertificates(c.var.context, merchantId, id), 200);
  })
  .openapi(deleteCertificates, async (c) => {
    const { merchantId, id } = c.req.valid("param");
    await applePay.deleteCertificates(c.var.context, merchantId, id);
    return c.body(null, 204);
  });
