import { createRoute, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { UnauthenticatedError } from "../errors";
import { clearSessionCookie, refuseForeignOrigin, requireOwnOrigin, sessionTokenOf, setSessionCookie } from "../http/console-cookie";
import type { AppEnv } from "../http/context";
import { EXAMPLE_IDS } from "../http/examples";
import { requireContentType } from "../http/middleware";
import { createRouter } from "../http/router";
import { jsonBody, jsonContent, problemResponses } from "../http/schemas";
import { ConsoleSessionSchema, SignInBody } from "./schema";
import * as consoleSessions from "./service";

const tags = ["Console"];
const security = [{ ConsoleSession: [] }];

const SESSION_EXAMPLE = {
  tenant_id: EXAMPLE_IDS.tenant,
  application: { id: EXAMPLE_IDS.application, name: "Operations", type: "management" as const },
  permissions: ["application:read", "application:create", "log:read"] as const,
  expires_at: "2026-11-23T12:30:00.000Z",
} satisfies z.output<typeof ConsoleSessionSchema>;

const signIn = createRoute({
  method: "post",
  path: "/console/session",
  tags,
  summary: "Sign in to the console with an API key",
  description:
    "Exchanges a management or private application's API key (a public key is a 403) for a console session: the answer sets " +
    "the `svc_console` cookie (HttpOnly, SameSite=Strict, Secure unless served over plain http on loopback), which every API " +
    "route then accepts in place of `SVC-API-KEY`, acting as that key: same permissions, rules, rate limits and audit actor. " +
    "The session ends after 30 minutes unused, 12 hours after sign-in, at sign-out, and as soon as the key is revoked or its " +
    "application deleted; an application keeps at most 20 sessions, and a sign-in beyond them ends its oldest. A request " +
    "from another site's page (its `Origin`) is a 403. The key is not stored, only its id.",
  middleware: [requireContentType("application/json")] as const,
  request: jsonBody(SignInBody, { api_key: "key_qG9t2XnB0yS5mVd7cE1hJ4kL8pR3wZ6aF0uI2oT5eYs" }),
  responses: {
    201: {
      ...jsonContent(ConsoleSessionSchema, "Signed in: the cookie is set", SESSION_EXAMPLE),
      headers: { "Set-Cookie": { description: "The session's cookie, `svc_console`", schema: { type: "string" } } },
    },
    ...problemResponses(400, 401, 403, 415, 429),
  },
});

const read = createRoute({
  method: "get",
  path: "/console/session",
  tags,
  security,
  summary: "Read the console session (and renew it)",
  description: "Who the session acts as and until when; using it renews it. Without a live session, a 401.",
  responses: {
    200: jsonContent(ConsoleSessionSchema, "The session", SESSION_EXAMPLE),
    ...problemResponses(401, 403, 429),
  },
});

const signOut = createRoute({
  method: "delete",
  path: "/console/session",
  tags,
  security,
  summary: "Sign out of the console",
  description:
    "Deletes the session and clears its cookie. Like every request the cookie authenticates that changes something, it must come from the vault's own pages (`Origin`), else a 403.",
  responses: { 204: { description: "Signed out; the cookie is cleared" }, ...problemResponses(401, 403, 429) },
});

/** The session of the request's cookie; a 401 without one. */
async function sessionOf(c: Context<AppEnv>): Promise<consoleSessions.ResolvedSession> {
  const token = sessionTokenOf(c.req.raw, c.var.config);
  if (!token) throw new UnauthenticatedError("No console session: sign in with POST /console/session");
  requireOwnOrigin(c.req.raw);
  return consoleSessions.resolveSession(c.var.request, token, c.req.raw.headers);
}

export const consoleRoutes = createRouter()
  .openapi(signIn, async (c) => {
    refuseForeignOrigin(c);
    const { token, session } = await consoleSessions.signIn(c.var.request, c.req.valid("json").api_key, c.req.raw.headers);
    setSessionCookie(c, token);
    return c.json(session, 201);
  })
  .openapi(read, async (c) => {
    const { principal, row } = await sessionOf(c);
    return c.json(await consoleSessions.describeSession(c.var.request, principal, row), 200);
  })
  .openapi(signOut, async (c) => {
    const { row } = await sessionOf(c);
    await consoleSessions.signOut(c.var.request, row);
    clearSessionCookie(c);
    return c.body(null, 204);
  });
