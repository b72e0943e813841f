import { toApplicationResponse } from "../applications/service";
import type { ApiKeyRow, ApplicationRow } from "../applications/storage";
import type { KeyPrincipal, Principal } from "../auth/access";
import type { RequestContext, TenantContext } from "../context";
import { generateSecret, sha256Hex, uuidFrom } from "../crypto/secrets";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { SESSIONS } from "../limits";
import { normalTokenId } from "../tokens/id-format";
import { requireWithinAuthorizer } from "./grants";
import { type NonceClaims, openNonce, signNonce } from "./nonce";
import type { AuthorizeSession, SessionRule } from "./schema";
import * as storage from "./storage";

/** Sessions deleted per batch, and batches per cron run: at most 10,000 a run, in statements D1 answers quickly. */
const PURGE_CHUNK = 500;
const PURGE_CHUNKS_PER_RUN = 20;

/** Session keys look like API keys: once authorized, one is the key of an expiring application. */
const SESSION_KEY_PREFIX = "key";

/**
 * A new session of the caller's public application: a key that authenticates nothing yet, and the
 * nonce that authorizes it. Nothing is stored: the nonce, signed by the vault, carries the session
 * key's digest and the session's times (./nonce.ts), so POST /sessions, which is public-key traffic,
 * costs no row however often it is called.
 */
export async function createSession(context: TenantContext, principal: Principal) {
  if (principal.applicationType !== "public") {
    throw new ForbiddenError("POST /sessions requires a public application's key");
  }
  const now = Date.now();
  const sessionKey = generateSecret(SESSION_KEY_PREFIX);
  const claims: NonceClaims = {
    applicationId: principal.applicationId,
    createdAt: now,
    expiresAt: now + SESSIONS.defaultLifetimeMs,
    keyHash: await sha256Hex(sessionKey),
  };
  const nonce = await signNonce(await context.keys(), claims);
  context.audit.describe({ entityId: await sessionIdOf(claims.keyHash) });
  return { session_key: sessionKey, nonce, expires_at: isoTime(claims.expiresAt)! };
}

/**
 * A session's id, the same when it is created and when it is authorized (its audit entries name
 * it), from its key's digest: the session is stored nowhere in between.
 */
async function sessionIdOf(keyHash: string): Promise<string> {
  return uuidFrom(await sha256Hex(`session/${keyHash}`));
}

/**
 * Makes the session of the nonce an expiring application of the caller's tenant with the grants
 * given, which must lie within the caller's own, until no later than the caller's key expires. The
 * nonce must be one this tenant's keys signed (anything else, another tenant's included, is unknown
 * here), still open, of a public application the tenant still has; it authorizes once. The
 * application records the authorizing key: its key works only while that key does (src/auth/storage.ts).
 */
export async function authorizeSession(context: TenantContext, principal: KeyPrincipal, input: AuthorizeSession): Promise<void> {
  const now = Date.now();
  const claims = await openNonce(await context.keys(), input.nonce);
  if (!claims) throw unknownNonce();
  if (claims.expiresAt <= now) throw new ConflictError(`This session ended at ${isoTime(claims.expiresAt)}`);
  const rules = input.rules.map(normalRule);
  checkGrantShape(input.permissions, rules);
  const expiresAt = expiryOf(input, claims, principal.credentialExpiresAt ?? null, now);
  requireWithinAuthorizer(principal, input.permissions, rules);
  const permissions = rules.length > 0 ? rules.flatMap((rule) => rule.permissions) : input.permissions;
  const sessionId = await sessionIdOf(claims.keyHash);
  const application: ApplicationRow = {
    id: crypto.randomUUID(),
    tenantId: context.tenantId,
    name: `Session ${sessionId}`,
    type: "expiring",
    permissions: JSON.stringify([...new Set(permissions)]),
    rules: JSON.stringify(rules),
    allowedOrigins: "[]",
    createdBy: principal.applicationId,
    createdAt: now,
    modifiedBy: null,
    modifiedAt: null,
    expiresAt,
    authorizerKeyId: principal.credentialId,
  };
  const key: ApiKeyRow = {
    id: crypto.randomUUID(),
    tenantId: context.tenantId,
    applicationId: application.id,
    hash: claims.keyHash,
    createdAt: now,
    expiresAt,
  };
  const nonceHash = await sha256Hex(input.nonce);
  const session: storage.SessionRow = {
    id: sessionId,
    tenantId: context.tenantId,
    applicationId: claims.applicationId,
    keyHash: claims.keyHash,
    nonceHash,
    createdAt: claims.createdAt,
    expiresAt,
    expiringApplicationId: application.id,
  };
  if (!(await storage.authorizeSession(context.control, session, application, key))) {
    // Nothing was written: the nonce authorized a session already, or its public application is gone.
    if (await storage.findSessionByNonce(context.control, context.tenantId, nonceHash)) {
      throw new ConflictError("This session is authorized already: a nonce authorizes once");
    }
    throw unknownNonce();
  }
  context.audit.describe({
    entityId: application.id,
    message: `for session ${sessionId}`,
    event: { type: "application.created", data: { application: toApplicationResponse(application) } },
  });
}

/** One answer for every nonce the tenant cannot authorize: unknown, altered, another tenant's, or its application's gone. */
function unknownNonce(): NotFoundError {
  return new NotFoundError("A session with this nonce");
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

/**
 * The session's end: the one POST /sessions answered, or a later time no further than
 * SESSIONS.maxLifetimeMs after its creation; never after the authorizing key's own expiry. A time
 * asked for past that expiry is a 400; the default is cut to it.
 */
function expiryOf(input: AuthorizeSession, claims: NonceClaims, authorizerExpiresAt: number | null, now: number): number {
  const latest = authorizerExpiresAt ?? Number.POSITIVE_INFINITY;
  if (input.expires_at === undefined) return Math.min(claims.expiresAt, latest);
  const expiresAt = Date.parse(input.expires_at);
  if (expiresAt <= now) throw ValidationError.field("expires_at", "must be in the future");
  if (expiresAt > claims.createdAt + SESSIONS.maxLifetimeMs) {
    throw ValidationError.field("expires_at", `must be at most ${SESSIONS.maxLifetimeMs / 3_600_000} hours after the session was created`);
  }
  if (expiresAt > latest) {
    throw ValidationError.field(
      "expires_at",
      `must not be later than the authorizing API key's own expiry, ${isoTime(latest)}: a session ends with its authorizer`,
    );
  }
  return expiresAt;
}

/** Called by the scheduled handler: ended sessions go, with the expiring applications they made, a bounded chunk per run. */
export async function purgeExpiredSessions(context: RequestContext, now = Date.now()): Promise<number> {
  let purged = 0;
  for (let chunk = 0; chunk < PURGE_CHUNKS_PER_RUN; chunk++) {
    const sessions = await storage.purgeExpiredSessions(context.control, now, PURGE_CHUNK);
    for (const session of sessions) {
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
