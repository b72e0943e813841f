import { and, eq, lt } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
import { sha256Hex } from "../crypto/secrets";
import { TenantKeys } from "../crypto/tenant-keys";
import { databaseOf, type Database } from "../db/client";
import { idempotencyRecords } from "../db/schema";
import type { AppEnv } from "./context";
import { ConflictError, ValidationError } from "./problem";

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * `{P}-IDEMPOTENCY-KEY` on a creating request: the same key with the same body within 24 hours
 * returns the first response (status and body); with another body, or while the first is still
 * running, 409. Responses are stored encrypted, since they may hold a new key or token data.
 * A 5xx is not remembered, so the client can retry it.
 */
export const idempotent: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { config, principal } = c.var;
  const key = c.req.header(config.headers.idempotencyKey);
  if (key === undefined) return next();
  if (!KEY_PATTERN.test(key)) {
    throw ValidationError.field(`header ${config.headers.idempotencyKey}`, "must be 1-255 printable ASCII characters");
  }
  const db = databaseOf(c.env);
  const where = and(
    eq(idempotencyRecords.tenantId, principal.tenantId),
    eq(idempotencyRecords.applicationId, principal.applicationId),
    eq(idempotencyRecords.key, key),
  );
  const requestHash = await sha256Hex(`${c.req.method} ${new URL(c.req.url).pathname} ${await c.req.text()}`);
  const now = Date.now();
  await db.delete(idempotencyRecords).where(and(where, lt(idempotencyRecords.createdAt, now - IDEMPOTENCY_WINDOW_MS)));
  const claimed = await db
    .insert(idempotencyRecords)
    .values({ tenantId: principal.tenantId, applicationId: principal.applicationId, key, requestHash, createdAt: now })
    .onConflictDoNothing()
    .returning({ key: idempotencyRecords.key });

  if (claimed.length === 0) {
    const [record] = await db.select().from(idempotencyRecords).where(where).limit(1);
    if (!record || record.requestHash !== requestHash) {
      throw new ConflictError("This idempotency key was already used with a different request");
    }
    if (record.status === null || record.response === null) {
      throw new ConflictError("A request with this idempotency key is still being processed");
    }
    const keys = await TenantKeys.derive(config.VAULT_MASTER_KEY, principal.tenantId);
    const body = await keys.decrypt(record.response, `idempotency/${key}`);
    return new Response(body || null, {
      status: record.status,
      headers: {
        "content-type": record.status >= 400 ? "application/problem+json" : "application/json",
        [`${config.HEADER_PREFIX}-Idempotent-Replayed`]: "true" },
    });
  }

  await next();
  await remember(db, where, c.res, config.VAULT_MASTER_KEY, principal.tenantId, key);
};

async function remember(
  db: Database,
  where: ReturnType<typeof and>,
  response: Response,
  masterKey: string,
  tenantId: string,
  key: string,
): Promise<void> {
  if (response.status >= 500) {
    await db.delete(idempotencyRecords).where(where);
    return;
  }
  const body = await response.clone().text();
  const keys = await TenantKeys.derive(masterKey, tenantId);
  await db
    .update(idempotencyRecords)
    .set({ status: response.status, response: await keys.encrypt(body, `idempotency/${key}`) })
    .where(where);
}

/** Called by the scheduled handler: records older than the window are useless. */
export async function purgeIdempotencyRecords(db: Database, now = Date.now()): Promise<void> {
  await db.delete(idempotencyRecords).where(lt(idempotencyRecords.createdAt, now - IDEMPOTENCY_WINDOW_MS));
}
