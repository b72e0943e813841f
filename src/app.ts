import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { applePayRoutes } from "./apple-pay/routes";
import { applePayWebRoutes } from "./apple-pay/web-routes";
import { applicationRoutes } from "./applications/routes";
import { auditRequests } from "./audit/middleware";
import { logRoutes } from "./audit/routes";
import { permissionRoutes } from "./auth/routes";
import { consoleRoutes } from "./console/routes";
import { detokenizeRoutes } from "./detokenization/routes";
import { documentRoutes, isDocumentUpload } from "./documents/routes";
import { elementRoutes } from "./elements/routes";
import { MethodNotAllowedError, NotFoundError } from "./errors";
import { googlePayRoutes } from "./google-pay/routes";
import type { AppEnv } from "./http/context";
import { handleError, problemResponse } from "./http/errors";
import { limitBody } from "./http/middleware";
import {
  CONSISTENCY_BOOKMARK_HEADER,
  DOCUMENTED_PREFIX,
  OPENAPI_OBJECT,
  registerDocumentedHeaders,
  TRACE_ID_HEADER,
} from "./http/openapi-document";
import { createRouter, documentEveryOperation, HTTP_METHODS } from "./http/router";
import { jsonContent, problemResponses } from "./http/schemas";
import { clientKeyRoutes } from "./keys/client-key-routes";
import { keyRoutes } from "./keys/routes";
import { proxyInvocationRoutes, proxyRoutes } from "./proxies/routes";
import { reactorRoutes } from "./reactors/routes";
import { authenticateKnownRoutes, bootstrapFirst, traceAndConfigure } from "./runtime/middleware";
import { searchRoutes } from "./search/routes";
import { sessionRoutes } from "./sessions/routes";
import { tenantRoutes, tenantSelfRoutes } from "./tenants/routes";
import { tokenIntentRoutes } from "./token-intents/routes";
import { tokenRoutes } from "./tokens/routes";
import { webhookRoutes } from "./webhooks/routes";

export function buildApp() {
  const app = new OpenAPIHono<AppEnv>({ strict: false });

  app.use("*", traceAndConfigure);
  app.use("*", auditRequests);
  // A document upload applies its own, larger limit (DOCUMENTS.maxBytes), counted as the body streams. (A plain test:
  // hono/combine's except() costs a router match and a middleware chain on every request.) Proxy calls never
  // come here: src/index.ts answers them (src/runtime/proxy-calls.ts).
  app.use("*", async (c, next) => {
    if (isDocumentUpload(c.req.method, c.req.path)) await next();
    else await limitBody(c, next);
  });

  app.get("/health", (c) => c.json({ status: "ok" }));
  app.openapi(ping, (c) => c.json({ status: "ok" as const }, 200));
  app.route("/", tenantRoutes);
  app.route("/", keyRoutes);
  app.route("/", proxyInvocationRoutes);
  // The document is written with the default prefix and served with this deployment's own header
  // names, so that a client generated from it sends the headers the vault reads.
  const documents = new Map<string, unknown>();
  app.get("/openapi.json", (c) => {
    const prefix = c.var.config.HEADER_PREFIX;
    let document = documents.get(prefix);
    if (!document) {
      const text = JSON.stringify(app.getOpenAPI31Document(OPENAPI_OBJECT));
      document = JSON.parse(
        text
          .replaceAll(`${DOCUMENTED_PREFIX}-`, `${prefix.toUpperCase()}-`)
          .replaceAll(`${DOCUMENTED_PREFIX.toLowerCase()}-`, `${prefix.toLowerCase()}-`)
          .replaceAll(`${DOCUMENTED_PREFIX.toLowerCase()}_console`, `${prefix.toLowerCase()}_console`),
      );
      documents.set(prefix, document);
    }
    return c.json(document);
  });
  // The API reference page: its script and styles are the vault's own static assets (public/docs).
  app.get("/docs", (c) => c.html(DOCS_PAGE, 200, DOCS_HEADERS));
  app.route("/", elementRoutes);
  app.use("/console/session", bootstrapFirst);
  app.route("/", consoleRoutes);
  registerDocumentedHeaders(app);

  const api = createRouter();
  api.use("*", authenticateKnownRoutes);
  api.route("/", applicationRoutes);
  api.route("/", permissionRoutes);
  api.route("/", sessionRoutes);
  api.route("/", proxyRoutes);
  api.route("/", tokenRoutes);
  api.route("/", tokenIntentRoutes);
  api.route("/", detokenizeRoutes);
  api.route("/", searchRoutes);
  api.route("/", reactorRoutes);
  api.route("/", logRoutes);
  api.route("/", webhookRoutes);
  api.route("/", clientKeyRoutes);
  api.route("/", googlePayRoutes);
  api.route("/", applePayWebRoutes);
  api.route("/", applePayRoutes);
  api.route("/", documentRoutes);
  api.route("/", tenantSelfRoutes);
  // Authentication counts every request against its key (src/auth/rate-limits.ts), refuses a public key's browser
  // calls from origins its application does not allow (403), and reads the caller's bookmark.
  documentEveryOperation(api, { responses: problemResponses(403, 429), parameters: [CONSISTENCY_BOOKMARK_HEADER] });
  app.route("/", api);
  // traceAndConfigure reads and answers the trace id of every request.
  documentEveryOperation(app, { parameters: [TRACE_ID_HEADER] });

  app.notFound((c) => notFoundOrWrongMethod(app, c));
  app.onError(handleError);
  return app;
}

/**
 * The original interface's liveness route (its Node SDK's `webhooks.ping`): /health under the name its
 * clients call. It reads no key, so that it says nothing about one.
 */
const ping = createRoute({
  method: "get",
  path: "/ping",
  tags: ["Status"],
  summary: "Check that the vault answers",
  description: "No key needed; a key sent with it is not read.",
  responses: { 200: jsonContent(z.object({ status: z.literal("ok") }), "The vault answers", { status: "ok" }) },
});

function notFoundOrWrongMethod(app: OpenAPIHono<AppEnv>, c: Context<AppEnv>): Response {
  const path = c.req.path;
  const allowed = HTTP_METHODS.filter((method) => app.router.match(method, path)[0].some(([[, route]]) => route.method === method));
  const error = allowed.length > 0 ? new MethodNotAllowedError(allowed) : new NotFoundError(`Route ${c.req.method} ${path}`);
  return handleErrorResponse(c, error);
}

function handleErrorResponse(c: Context<AppEnv>, error: MethodNotAllowedError | NotFoundError): Response {
  const response = problemResponse(error.toProblem(), error.headers);
  if (c.var.config) response.headers.set(c.var.config.headers.traceId, c.var.traceId);
  return response;
}

/**
 * The reference page shares its origin with the elements' frames, and keys are pasted into it: it
 * runs only the vault's own scripts, talks only to the vault, and no page may frame it. Swagger UI
 * sets inline styles and draws data: images.
 */
const DOCS_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};

/** The API reference page: Swagger UI (public/docs/vendor) rendering /openapi.json, set up by public/docs/init.js. */
const DOCS_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Token vault API reference</title>
    <link rel="stylesheet" href="/docs/vendor/swagger-ui.css" />
  </head>
  <body>
    <div id="reference"></div>
    <script src="/docs/vendor/swagger-ui-bundle.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;
