import { createRoute } from "@hono/zod-openapi";
import { requirePermission } from "../auth/middleware";
import { requireContentType } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, problemResponses } from "../http/schemas";
import { AUTHORIZE_SESSION_EXAMPLE, CREATED_SESSION_EXAMPLE } from "./examples";
import { AuthorizeSessionBody, CreatedSessionSchema } from "./schema";
import * as sessions from "./service";

const tags = ["Sessions"];
const security = [{ ApiKey: [] }];

const create = createRoute({
  method: "post",
  path: "/sessions",
  tags,
  security,
  summary: "Create a session (with a public application's key)",
  description:
    "Answers a session key and a nonce. The key authenticates nothing (401) until the application's server authorizes the " +
    "nonce with POST /sessions/authorize within a minute; the session then ends a minute after its creation unless that sets " +
    "another time. Nothing is stored until then: the nonce is signed by the vault and carries what authorizing needs. Another " +
    "type of key is a 403.",
  responses: {
    201: jsonContent(CreatedSessionSchema, "The session key and its nonce, shown once", CREATED_SESSION_EXAMPLE),
    ...problemResponses(401, 403),
  },
});

const authorize = createRoute({
  method: "post",
  path: "/sessions/authorize",
  tags,
  security,
  summary: "Authorize a session: it becomes an expiring application",
  description:
    "Needs session:authorize. Grants the nonce's session `permissions` or `rules` (not both), none beyond the caller's own: " +
    "a permission the caller lacks on a container the grant reaches, or a transform more revealing than the caller's, is a 403. " +
    "A rule may name tokens with `conditions` (`id` or `container`, `equals` or `starts_with`) instead of a container: it reaches " +
    "only those tokens, read by id (lists and searches never show a token through it), and an id-only rule counts as reaching " +
    "every container. The session becomes an application of type `expiring` until `expires_at` (default: the end POST /sessions " +
    "answered, cut to the calling key's own expiry when that comes first; at most a day after the session's creation, and a time " +
    "after the calling key's expiry is a 400); from then on its key answers 401. The session also ends (401) once the calling " +
    "key is revoked, replaced or deleted with its application. A nonce the vault did not sign for this tenant (unknown, altered " +
    "or another tenant's), or whose public application was deleted, is a 404; a nonce authorizes once (409), and not after its " +
    "minute (409).",
  middleware: [requirePermission("session:authorize"), requireContentType("application/json")] as const,
  request: jsonBody(AuthorizeSessionBody, AUTHORIZE_SESSION_EXAMPLE),
  responses: { 200: { description: "Authorized; no body" }, ...problemResponses(400, 401, 403, 404, 409, 415) },
});

export const sessionRoutes = createRouter()
  .openapi(create, async (c) => c.json(await sessions.createSession(c.var.context, c.var.principal), 201))
  .openapi(authorize, async (c) => {
    await sessions.authorizeSession(c.var.context, c.var.principal, c.req.valid("json"));
    return c.body(null, 200);
  });
