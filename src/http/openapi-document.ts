import type { OpenAPIHono } from "@hono/zod-openapi";
import { IDEMPOTENCY_LEASE_MS } from "../limits";
import type { AppEnv } from "./context";

/**
 * The OpenAPI document's opening (its guide and tags) and the vault's own headers. Everything is
 * written with the default prefix; the served document replaces it by the deployment's HEADER_PREFIX.
 */
export const DOCUMENTED_PREFIX = "SVC";

const GUIDE = `A vault for sensitive data: it keeps values as encrypted tokens, searches them without showing them, \
and sends their data to partners through proxies and reactors that put it in place on the way out.

### Authenticate
Send an application's API key in the \`SVC-API-KEY\` header of every request ("Authorize" keeps it for "Try it out"). \
The application's permissions and access rules decide what the key may do; \`GET /permissions\` lists the permissions. \
Tenants and their keys are the deployment operator's, under \`SVC-OPERATOR-KEY\`.

### Errors
Every failure answers an RFC 7807 problem, \`application/problem+json\`: \`{type, title, status, detail, errors?}\`, where \
\`errors\` maps each field at fault to its messages. A failure of \`/proxy\` inside the vault wraps the same problem in \
\`proxy_error\`, to tell it from the destination's reply. Every reply carries \`SVC-TRACE-ID\`: quote it when reporting a 5xx.

### Where to start
1. Create a token: \`POST /tokens\` with \`{"type": "card", "data": {...}}\` answers the new token with its \`id\`.
2. Search it: \`POST /tokens/search\` with \`{"query": "data:4242424242424242"}\`.
3. Send it through a proxy: \`POST /proxies\` with a \`destination_url\` answers the proxy's \`key\`; a request to \`/proxy\` \
with that key in \`SVC-PROXY-KEY\` and \`{{ <token id> }}\` in its body reaches the destination with the token's data in its place.`;

/** The document's opening: the guide, and the tags in the order a newcomer meets them. */
export const OPENAPI_OBJECT = {
  openapi: "3.1.0",
  info: { title: "Token vault", version: "1.0.0", description: GUIDE },
  tags: [
    { name: "Tokens", description: "Store sensitive values as tokens, read them back masked or revealed, search and detokenize them." },
    {
      name: "Token intents",
      description:
        "Data a browser collected, held encrypted for a day: a private key reads its facts, uses it in expressions and converts it into a token once.",
    },
    { name: "Proxies", description: "Pre-configured proxies: a destination, optional transforms and the key that invokes them." },
    {
      name: "Proxy invocation",
      description: "Send a request through a proxy: token references are replaced by their data on the way to the destination.",
    },
    { name: "Reactor formulas", description: "The code reactors run: the official formulas and the tenant's own." },
    { name: "Reactors", description: "A formula with its configuration, run on request with detokenized arguments." },
    { name: "Applications", description: "Applications, their API keys, permissions and access rules." },
    { name: "Tenants", description: "The caller's own tenant: read it and rename it." },
    {
      name: "Sessions",
      description: "Short-lived keys a public application's page creates and its server authorizes for chosen tokens.",
    },
    { name: "Console", description: "Sign in to the web console at /console: a session cookie stands for an API key." },
    { name: "Webhooks", description: "Signed notifications of the tenant's events, sent to its URLs." },
    {
      name: "Client encryption keys",
      description: "Key pairs whose public key encrypts data on the client (a JWE) that only the vault decrypts, as token data.",
    },
    {
      name: "Google Pay",
      description:
        "Google Pay tokens (ECv2) decrypted in the vault into token intents, for the merchants registered with their private keys.",
    },
    {
      name: "Apple Pay",
      description: "Apple Pay merchants, their payment processing certificates, and EC_v1 payment tokens decrypted into token intents.",
    },
    { name: "Documents", description: "Files stored encrypted, chunk by chunk, each under a data key of its own." },
    { name: "Audit log", description: "Who did what to which entity, in a hash chain that can be verified." },
    { name: "Operators", description: "The deployment operator's routes: tenants, their placement and their keys." },
    { name: "Status", description: "Whether the vault answers, for clients and monitors: no key needed." },
  ],
};

const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });

/** On every operation that authenticates with an API key. */
export const CONSISTENCY_BOOKMARK_HEADER = parameterRef("ConsistencyBookmark");
/** On every operation. */
export const TRACE_ID_HEADER = parameterRef("TraceId");
/** On the operations whose route runs the `idempotent` middleware. */
export const IDEMPOTENCY_KEY_HEADER = parameterRef("IdempotencyKey");
/** On the proxy invocation. */
export const PROXY_URL_HEADER = parameterRef("ProxyUrl");

/** A proxy is invoked by its key, with an API key too when it requires one; an ephemeral proxy by an API key alone. */
export const PROXY_INVOCATION_SECURITY: Record<string, string[]>[] = [
  { ProxyKey: [] },
  { ProxyKey: [], ApiKey: [] },
  { ProxyKeyQuery: [] },
  { ProxyKeyQuery: [], ApiKey: [] },
  { ApiKey: [] },
];

/** Registers the security schemes and header parameters the operations refer to. */
export function registerDocumentedHeaders(app: OpenAPIHono<AppEnv>): void {
  const registry = app.openAPIRegistry;
  registry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "SVC-API-KEY",
    description: "An application's API key: its permissions and access rules decide what it may do.",
  });
  registry.registerComponent("securitySchemes", "ConsoleSession", {
    type: "apiKey",
    in: "cookie",
    name: "svc_console",
    description:
      "The console's session cookie (POST /console/session): every route that takes the API key header accepts it when that header is absent, " +
      "acting as the key that signed in; a request with it that may change something must come from the vault's own pages (Origin). " +
      "Named with the `__Host-` prefix wherever it is Secure (every origin but plain http on loopback).",
  });
  registry.registerComponent("securitySchemes", "OperatorKey", {
    type: "apiKey",
    in: "header",
    name: "SVC-OPERATOR-KEY",
    description: "The deployment's operator key (OPERATOR_API_KEY), for the operators' routes.",
  });
  registry.registerComponent("securitySchemes", "ProxyKey", {
    type: "apiKey",
    in: "header",
    name: "SVC-PROXY-KEY",
    description: "The key of the proxy to invoke, as POST /proxies answered it.",
  });
  registry.registerComponent("securitySchemes", "ProxyKeyQuery", {
    type: "apiKey",
    in: "query",
    name: "svc-proxy-key",
    description: "The proxy's key as a query parameter, for callers that cannot set a header.",
  });
  registry.registerComponent("parameters", "TraceId", {
    name: "SVC-TRACE-ID",
    in: "header",
    required: false,
    description:
      "Names the request in the vault's logs and audit log, and comes back on the reply. Without it, or with one that " +
      "does not match the pattern, the vault assigns one.",
    schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
  });
  registry.registerComponent("parameters", "ConsistencyBookmark", {
    name: "SVC-CONSISTENCY-BOOKMARK",
    in: "header",
    required: false,
    description:
      "A bookmark an earlier reply carried in this same header: this request's reads are at least as fresh as that " +
      "reply's writes, even from a read replica.",
    schema: { type: "string", pattern: "^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$" },
  });
  registry.registerComponent("parameters", "IdempotencyKey", {
    name: "SVC-IDEMPOTENCY-KEY",
    in: "header",
    required: false,
    description:
      "The same key with the same request within 24 hours answers the first reply again (with SVC-Idempotent-Replayed: " +
      "true) instead of acting twice; with another request, 409. A 5xx is not kept. While the first request runs, a retry " +
      `is a 409 with Retry-After: it holds the key by a lease (${IDEMPOTENCY_LEASE_MS / 1000} s by default). When it stopped without ` +
      "an answer, a retry of POST /tokens or /tokenize answers the tokens it wrote (their batch marks the key), or after " +
      "the lease runs it when it wrote none; on other routes a retry after the lease is a 409 saying the outcome is unknown.",
    schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
  });
  registry.registerComponent("parameters", "ProxyUrl", {
    name: "SVC-PROXY-URL",
    in: "header",
    required: false,
    description:
      "Without a proxy key: the destination of an ephemeral proxy, invoked with an API key holding token:use (when the " +
      "deployment enables ephemeral proxies).",
    schema: { type: "string", format: "uri" },
  });
}
