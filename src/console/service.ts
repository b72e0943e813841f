/**
 * Console sessions: a person signs in to /console with an API key once, and the browser then holds
 * only a cookie whose token stands for that key. Each request resolves the token to its session and
 * the session's key id to the principal the key itself would be (src/auth/service.ts), so the
 * console does exactly what the key may do, and a revoked key or deleted application ends it.
 */
import { findApplication } from "../applications/storage";
import type { KeyPrincipal } from "../auth/access";
import { countKeyRequests } from "../auth/rate-limits";
import { principalForKey, principalForKeyId } from "../auth/service";
import type { RequestContext } from "../context";
import { generateSecret, sha256Hex } from "../crypto/secrets";
import { ForbiddenError, UnauthenticatedError } from "../errors";
import { requireOwnOrigin } from "../http/console-cookie";
import { isoTime } from "../http/schemas";
import { CONSOLE_SESSIONS } from "../limits";
import type { ConsoleSessionResponse } from "./schema";
import * as storage from "./storage";

/** Ended sessions deleted per cron run. */
const PURGE_LIMIT = 1_000;

const TOKEN_PREFIX = "console";

export interface SignedIn {
  /** The cookie's value, answered once and stored only as its digest. */
  token: string;
  session: ConsoleSessionResponse;
}

export interface ResolvedSession {
  principal: KeyPrincipal;
  row: storage.ConsoleSessionRow;
}

/**
 * Exchanges an API key for a new console session. A public key is refused (403): it ships in every
 * shopper's page, and the console is for the people who run the vault. The sign-in counts against
 * the key, as any request with it does. (The app runs the bootstrap before it: runtime/middleware.ts.)
 */
export async function signIn(context: RequestContext, apiKey: string, headers: Headers): Promise<SignedIn> {
  const principal = await principalForKey(context, apiKey);
  if (!principal) throw new UnauthenticatedError("The API key is unknown or has been revoked");
  context.audit.actingAs(principal);
  if (principal.applicationType === "public") {
    throw new ForbiddenError("A public application's key cannot sign in to the console: use a management or private key");
  }
  await countKeyRequests(context, principal, headers);
  const now = Date.now();
  const token = generateSecret(TOKEN_PREFIX);
  const endsAt = now + CONSOLE_SESSIONS.absoluteLifetimeMs;
  const row: storage.ConsoleSessionRow = {
    id: crypto.randomUUID(),
    tenantId: principal.tenantId,
    applicationId: principal.applicationId,
    keyId: principal.credentialId,
    tokenHash: await sha256Hex(token),
    createdAt: now,
    renewedAt: now,
    expiresAt: Math.min(now + CONSOLE_SESSIONS.idleLifetimeMs, endsAt),
    endsAt,
  };
  await storage.insertSession(context.control, row, CONSOLE_SESSIONS.maxPerApplication);
  context.audit.describe({ entityId: row.id });
  return { token, session: await describeSession(context, principal, row) };
}

/**
 * The principal of the console session a request's cookie carries, for the API and for proxy
 * invocation alike. A request that may change something must come from the vault's own origin,
 * checked before the session is read: a foreign one changes nothing (403). Resolving the session
 * counts the request against its key.
 */
export async function principalOfSessionRequest(context: RequestContext, request: Request, token: string): Promise<KeyPrincipal> {
  requireOwnOrigin(request);
  return (await resolveSession(context, token, request.headers)).principal;
}

/**
 * The session a cookie's token stands for and its key's principal, renewed (written at most once per
 * CONSOLE_SESSIONS.renewEveryMs); a 401 when it is unknown or ended. A session whose key is revoked,
 * expired or gone with its application is deleted as it is found. Counted against the key.
 */
export async function resolveSession(context: RequestContext, token: string, headers: Headers): Promise<ResolvedSession> {
  const row = token.length <= 128 ? await storage.findSessionByTokenHash(context.control, await sha256Hex(token)) : undefined;
  if (!row) throw new UnauthenticatedError("The console session is unknown or was signed out: sign in again");
  const now = Date.now();
  if (row.expiresAt <= now) {
    await storage.deleteSession(context.control, row.tenantId, row.id);
    throw new UnauthenticatedError(`The console session ended at ${isoTime(row.expiresAt)}: sign in again`);
  }
  const principal = await principalOfSession(context, row);
  context.audit.actingAs(principal);
  await countKeyRequests(context, principal, headers);
  if (now - row.renewedAt >= CONSOLE_SESSIONS.renewEveryMs) {
    const expiresAt = Math.min(now + CONSOLE_SESSIONS.idleLifetimeMs, row.endsAt);
    await storage.renewSession(context.control, row, now, expiresAt);
    return { principal, row: { ...row, renewedAt: now, expiresAt } };
  }
  return { principal, row };
}

/** The principal of the session's key, as the key itself resolves; the session goes with its key. */
async function principalOfSession(context: RequestContext, row: storage.ConsoleSessionRow): Promise<KeyPrincipal> {
  let principal: KeyPrincipal | null;
  try {
    principal = await principalForKeyId(context, row.tenantId, row.keyId);
  } catch (error) {
    // The key expired: so does the session.
    await storage.deleteSession(context.control, row.tenantId, row.id);
    throw error;
  }
  if (!principal) {
    await storage.deleteSession(context.control, row.tenantId, row.id);
    throw new UnauthenticatedError("The console session's API key has been revoked, or its application deleted: sign in again");
  }
  return principal;
}

/** What GET /console/session answers: who the session acts as, and until when. */
export async function describeSession(
  context: RequestContext,
  principal: KeyPrincipal,
  row: storage.ConsoleSessionRow,
): Promise<ConsoleSessionResponse> {
  const application = await findApplication(context.control, row.tenantId, row.applicationId);
  if (!application) throw new UnauthenticatedError("The console session's application has been deleted: sign in again");
  return {
    tenant_id: row.tenantId,
    application: { id: application.id, name: application.name, type: application.type },
    permissions: principal.permissions,
    expires_at: isoTime(row.expiresAt)!,
  };
}

export async function signOut(context: RequestContext, row: storage.ConsoleSessionRow): Promise<void> {
  await storage.deleteSession(context.control, row.tenantId, row.id);
  context.audit.describe({ entityId: row.id });
}

/** Called by the scheduled handler: sessions past their end go, a bounded number per run. */
export function purgeEndedConsoleSessions(context: RequestContext, now = Date.now()): Promise<number> {
  return storage.purgeEndedSessions(context.control, now, PURGE_LIMIT);
}
