import { toApplicationResponse } from "../applications/service";
import type { ApiKeyRow, ApplicationRow } from "../applications/storage";
import type { Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { toBase64Url } from "../crypto/encoding";
import { generateSecret, sha256Hex } from "../crypto/secrets";
import { ConflictError, ForbiddenError, NotFoundError, TooManyRequestsError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { SESSIONS } from "../limits";
import { normalTokenId } from "../tokens/id-format";
import { requireWithinAuthorizer } from "./grants";
import type { AuthorizeSession, SessionRule } from "./schema";
import * as storage from "./storage";

/** Sessions deleted per batch, and batches per cron run: at most 10,000 a run, in statements D1 answers quickly. */
const PURGE_CHUNK = 500;
const PURGE_CHUNKS_PER_RUN = 20;

/** Session keys look like API keys: once authorized, one is the key of an expiring application. */
const SESSION_KEY_PREFIX = "key";

/**
 * A new session of the caller's public application: a key that authenticates nothing yet, and the
 * nonce that authorizes it. Only their digests are stored. POST /sessions is public-key traffic, so
 * besides the rate limits every request meets, an application holds at most SESSIONS.maxPending
 * sessions awaiting authorization.
 */
export async function createSession(context: TenantContext, principal: Principal) {
  if (principal.applicationType !== "public") {
    throw new ForbiddenError("POST /sessions requires a public application's key");
  }
  const now = Date.now();
  const pending = await storage.pendingSessions(context.control, context.tenantId, principal.applicationId, now, SESSIONS.maxPending);
  if (pending >= SESSIONS.maxPending) {
    throw new TooManyRequestsError(
      `This application has ${SESSIONS.maxPending} sessions awaiting authorization`,
      SESSIONS.defaultLifetimeMs / 1000,
    );
  }
  const sessionKey = generateSecret(SESSION_KEY_PREFIX);
  const nonce = toBase64Url(crypto.getRandomValues(new Uint8Array(16)));
  const row: storage.SessionRow = {
    id: crypto.randomUUID(),
    tenantId: context.tenantId,
    applicationId: principal.applicationId,
    keyHash: await sha256Hex(sessionKey),
    nonceHash: await sha256Hex(nonce),
    createdAt: now,
    expiresAt: now + SESSIONS.defaultLifetimeMs,
    expiringApplicationId: null,
  };
  await storage.insertSession(context.control, row);
  context.audit.describe({ entityId: row.id });
  return { session_key: sessionKey, nonce, expires_at: isoTime(row.expiresAt)! };
}

/**
 * Makes the session of the nonce an expiring application of the caller's tenant with the grants
 * given, which must lie within the caller's own; a nonce authorizes once, and only before its
 * session ends. Another tenant's nonce is unknown here, like a wrong one.
 */
export async function authorizeSession(context: TenantContext, principal: Principal, input: AuthorizeSession): Promise<void> {
  const now = Date.now();
  const session = await storage.findSessionByNonce(context.control, context.tenantId, await sha256Hex(input.nonce));
  if (!session) throw new NotFoundError("A session with this nonce");
  if (session.expiringApplicationId !== null) throw new ConflictError("This session is authorized already: a nonce authorizes once");
  if (session.expiresAt <= now) throw new ConflictError(`This session ended at ${isoTime(session.expiresAt)}`);
  const rules = input.rules.map(normalRule);
  checkGrantShape(input.permissions, rules);
  const expiresAt = expiryOf(input, session, now);
  requireWithinAuthorizer(principal, input.permissions, rules);
  const permissions = rules.length > 0 ? rules.flatMap((rule) => rule.permissions) : input.permissions;
  const application: ApplicationRow = {
    id: crypto.randomUUID(),
    tenantId: context.tenantId,
    name: `Session ${session.id}`,
    type: "expiring",
    permissions: JSON.stringify([...new Set(permissions)]),
    rules: JSON.stringify(rules),
    allowedOrigins: "[]",
    createdBy: principal.applicationId,
    createdAt: now,
    modifiedBy: null,
    modifiedAt: null,
    expiresAt,
  };
  const key: ApiKeyRow = {
    id: crypto.randomUUID(),
    tenantId: context.tenantId,
    applicationId: application.id,
    hash: session.keyHash,
    createdAt: now,
    expiresAt,
  };
  if (!(await storage.authorizeSession(context.control, session, application, key))) {
    throw new ConflictError("This session is authorized already, or ended: a nonce authorizes once");
  }
  context.audit.describe({
    entityId: application.id,
    message: `for session ${session.id}`,
    event: { type: "application.created", data: { application: toApplicationResponse(application) } },
  });
}

/** Token ids in conditions as tokens store them (UUIDs in lower case), so that `equals` compares like ids. */
function normalRule(rule: SessionRule): SessionRule {
  if (!rule.conditions) return rule;
  return {
    ...rule,
    conditions: rule.conditions.map((condition) =>
      condition.attribute === "id" && condition.operator === "equals" ? { ...condition, value: normalTokenId(condition.value) } : condition,
    ),
  };
}

/** Either permissions or rules, one of them not empty; rule priorities unique. */
function checkGrantShape(permissions: string[], rules: SessionRule[]): void {
  if (permissions.length > 0 && rules.length > 0) {
    throw ValidationError.field("permissions", "must be empty when rules are given: rules grant permissions per container or token");
  }
  if (permissions.length === 0 && rules.length === 0) {
    throw ValidationError.field("permissions", "either permissions or rules must grant something");
  }
  const priorities = new Set<number>();
  rules.forEach((rule, i) => {
    if (priorities.has(rule.priority)) throw ValidationError.field(`rules[${i}].priority`, "must be unique among the rules");
    priorities.add(rule.priority);
  });
}

/** The session's end: the one POST /sessions answered, or a later time no further than SESSIONS.maxLifetimeMs after its creation. */
function expiryOf(input: AuthorizeSession, session: storage.SessionRow, now: number): number {
  if (input.expires_at === undefined) return session.expiresAt;
  const expiresAt = Date.parse(input.expires_at);
  if (expiresAt <= now) throw ValidationError.field("expires_at", "must be in the future");
  if (expiresAt > session.createdAt + SESSIONS.maxLifetimeMs) {
    throw ValidationError.field("expires_at", `must be at most ${SESSIONS.maxLifetimeMs / 3_600_000} hours after the session was created`);
  }
  return expiresAt;
}

/** Called by the scheduled handler: ended sessions go, with the expiring applications they made, a bounded chunk per run. */
export async function purgeExpiredSessions(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
    const sessions = await storage.purgeExpiredSessions(context.control, now, PURGE_CHUNK);
    for (const session of sessions) {
      if (session.expiringApplicationId === null) continue;
      context.audit.record({
        tenantId: session.tenantId,
        entityType: "application",
        entityId: session.expiringApplicationId,
        operation: "delete",
        message: "Deleted expired session application",
      });
    }
    purged += sessions.length;
    if (sessions.length < PURGE_CHUNK) break;
  }
  return purged;
}
