import { and, count, desc, eq, inArray, type SQL } from "drizzle-orm";
import type { AccessRule, Principal } from "../auth/access";
import { credentialsChanged } from "../auth/lookup-cache";
import { mayHold, PERMISSIONS_BY_TYPE, type ApplicationType, type Permission } from "../auth/permissions";
import { generateSecret, sha256Hex } from "../crypto/secrets";
import type { Database } from "../db/client";
import { apiKeys, applications } from "../db/schema";
import { ConflictError, NotFoundError, ValidationError, type FieldErrors } from "../http/problem";
import { nameMatches } from "../db/filters";
import { auditFieldsOf, isoTime, pageOf, type Page } from "../http/schemas";
import type {
  ApplicationKeyResponse,
  ApplicationResponse,
  CreateApplication,
  UpdateApplication,
} from "./schema";
import { selectPage } from "../db/pages";

export const API_KEY_PREFIX = "key";
const MAX_KEYS_PER_APPLICATION = 20;

type ApplicationRow = typeof applications.$inferSelect;

export function toApplicationResponse(row: ApplicationRow): ApplicationResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    type: row.type,
    permissions: JSON.parse(row.permissions),
    rules: JSON.parse(row.rules),
    ...auditFieldsOf(row),
  };
}

/**
 * Permissions must suit the application type, in `permissions` and in every rule. An application
 * uses either plain permissions (every container) or rules (per container), not both; its
 * `permissions` are then the union of its rules' permissions.
 */
function checkGrants(type: ApplicationType, permissions: Permission[], rules: AccessRule[]): Permission[] {
  const errors: FieldErrors = {};
  const refuse = (path: string, permission: string) =>
    (errors[path] ??= []).push(
      `${permission} cannot be held by a ${type} application (allowed: ${PERMISSIONS_BY_TYPE[type].join(", ")})`,
    );
  permissions.forEach((permission, i) => mayHold(type, permission) || refuse(`permissions[${i}]`, permission));
  rules.forEach((rule, i) =>
    rule.permissions.forEach((permission, j) => mayHold(type, permission) || refuse(`rules[${i}].permissions[${j}]`, permission)),
  );
  if (rules.length > 0 && permissions.length > 0) {
    errors.permissions = ["must be empty when rules are given: rules grant permissions per container"];
  }
  if (rules.length > 0 && type === "management") errors.rules = ["management applications have no container rules"];
  const priorities = new Set<number>();
  rules.forEach((rule, i) => {
    if (priorities.has(rule.priority)) (errors[`rules[${i}].priority`] ??= []).push("must be unique among the rules");
    priorities.add(rule.priority);
  });
  if (Object.keys(errors).length > 0) {
    throw new ValidationError("The application's permissions are not valid for its type", errors);
  }
  const granted = rules.length > 0 ? rules.flatMap((rule) => rule.permissions) : permissions;
  return [...new Set(granted)];
}

async function newKey(tenantId: string, applicationId: string, now: number) {
  const key = generateSecret(API_KEY_PREFIX);
  const row = { id: crypto.randomUUID(), tenantId, applicationId, hash: await sha256Hex(key), createdAt: now };
  return { row, response: { id: row.id, key, created_at: isoTime(now)! } };
}

/** Creates the application and its first key in one batch: both or neither. */
export function createApplication(db: Database, principal: Principal, input: CreateApplication) {
  return insertApplication(db, principal.tenantId, principal.applicationId, input);
}

export async function insertApplication(
  db: Database,
  tenantId: string,
  createdBy: string | null,
  input: CreateApplication,
  id: string = crypto.randomUUID(),
) {
  const permissions = checkGrants(input.type, input.permissions, input.rules);
  const now = Date.now();
  const row: ApplicationRow = {
    id,
    tenantId,
    name: input.name,
    type: input.type,
    permissions: JSON.stringify(permissions),
    rules: JSON.stringify(input.rules),
    createdBy,
    createdAt: now,
    modifiedBy: null,
    modifiedAt: null,
  };
  const key = await newKey(tenantId, row.id, now);
  await db.batch([db.insert(applications).values(row), db.insert(apiKeys).values(key.row)]);
  return withNewKey(toApplicationResponse(row), key.response);
}

/** The application as answered when a key was just made for it: the only time the key is shown. */
function withNewKey(application: ApplicationResponse, key: Required<ApplicationKeyResponse>) {
  return { ...application, key: key.key, keys: [key] };
}

async function findApplication(db: Database, tenantId: string, id: string): Promise<ApplicationRow> {
  const [row] = await db
    .select()
    .from(applications)
    .where(and(eq(applications.tenantId, tenantId), eq(applications.id, id)))
    .limit(1);
  if (!row) throw new NotFoundError(`Application ${id}`);
  return row;
}

export async function getApplication(db: Database, principal: Principal, id: string) {
  return toApplicationResponse(await findApplication(db, principal.tenantId, id));
}

/** The applications of the tenant among `ids`, by id (for responses that embed an application). */
export async function applicationsById(db: Database, tenantId: string, ids: string[]): Promise<Map<string, ApplicationResponse>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .select()
    .from(applications)
    .where(and(eq(applications.tenantId, tenantId), inArray(applications.id, [...new Set(ids)])));
  return new Map(rows.map((row) => [row.id, toApplicationResponse(row)]));
}

export async function listApplications(
  db: Database,
  principal: Principal,
  filter: { id: string[]; name?: string; page: number; size: number },
): Promise<Page<ApplicationResponse>> {
  const conditions: SQL[] = [eq(applications.tenantId, principal.tenantId)];
  if (filter.id.length > 0) conditions.push(inArray(applications.id, filter.id));
  if (filter.name) conditions.push(nameMatches(applications.name, filter.name));
  const where = and(...conditions);
  const { rows, total } = await selectPage(db, applications, where, [desc(applications.createdAt), desc(applications.id)], filter);
  return pageOf(rows.map(toApplicationResponse), total, filter.page, filter.size);
}

export async function updateApplication(db: Database, principal: Principal, id: string, input: UpdateApplication) {
  const existing = await findApplication(db, principal.tenantId, id);
  if (input.type !== undefined && input.type !== existing.type) {
    throw ValidationError.field("type", "cannot be changed; create a new application instead");
  }
  const permissions = checkGrants(existing.type, input.permissions, input.rules);
  const [row] = await db
    .update(applications)
    .set({
      name: input.name,
      permissions: JSON.stringify(permissions),
      rules: JSON.stringify(input.rules),
      modifiedBy: principal.applicationId,
      modifiedAt: Date.now(),
    })
    .where(and(eq(applications.tenantId, principal.tenantId), eq(applications.id, id)))
    .returning();
  if (!row) throw new NotFoundError(`Application ${id}`);
  credentialsChanged();
  return toApplicationResponse(row);
}

/** Deletes the application and revokes all its keys at once. */
export async function deleteApplication(db: Database, principal: Principal, id: string): Promise<void> {
  if (id === principal.applicationId) {
    throw new ConflictError("An application cannot delete itself; use another management application");
  }
  await findApplication(db, principal.tenantId, id);
  await db.batch([
    db.delete(apiKeys).where(and(eq(apiKeys.tenantId, principal.tenantId), eq(apiKeys.applicationId, id))),
    db.delete(applications).where(and(eq(applications.tenantId, principal.tenantId), eq(applications.id, id))),
  ]);
  credentialsChanged();
}

export async function createApplicationKey(db: Database, principal: Principal, id: string) {
  await findApplication(db, principal.tenantId, id);
  const [existing] = await db
    .select({ total: count() })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, principal.tenantId), eq(apiKeys.applicationId, id)));
  if ((existing?.total ?? 0) >= MAX_KEYS_PER_APPLICATION) {
    throw new ConflictError(`An application holds at most ${MAX_KEYS_PER_APPLICATION} keys; revoke one first`);
  }
  const key = await newKey(principal.tenantId, id, Date.now());
  await db.insert(apiKeys).values(key.row);
  return key.response;
}

/**
 * Replaces every key of the application with one new key, in one batch: the old keys stop working
 * with the next request (README "Credential lookups"), as the original interface documents.
 */
export async function regenerateApplicationKey(db: Database, principal: Principal, id: string) {
  await findApplication(db, principal.tenantId, id);
  const now = Date.now();
  const key = await newKey(principal.tenantId, id, now);
  const [, [row]] = await db.batch([
    db.delete(apiKeys).where(and(eq(apiKeys.tenantId, principal.tenantId), eq(apiKeys.applicationId, id))),
    db
      .update(applications)
      .set({ modifiedBy: principal.applicationId, modifiedAt: now })
      .where(and(eq(applications.tenantId, principal.tenantId), eq(applications.id, id)))
      .returning(),
    db.insert(apiKeys).values(key.row),
  ]);
  credentialsChanged();
  if (!row) {
    // Deleted meanwhile: the new key must not outlive it.
    await db.delete(apiKeys).where(and(eq(apiKeys.tenantId, principal.tenantId), eq(apiKeys.id, key.row.id)));
    throw new NotFoundError(`Application ${id}`);
  }
  return withNewKey(toApplicationResponse(row), key.response);
}

export async function listApplicationKeys(db: Database, principal: Principal, id: string): Promise<ApplicationKeyResponse[]> {
  await findApplication(db, principal.tenantId, id);
  const rows = await db
    .select({ id: apiKeys.id, createdAt: apiKeys.createdAt })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, principal.tenantId), eq(apiKeys.applicationId, id)))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
  return rows.map((row) => ({ id: row.id, created_at: isoTime(row.createdAt)! }));
}

export async function revokeApplicationKey(db: Database, principal: Principal, id: string, keyId: string): Promise<void> {
  await findApplication(db, principal.tenantId, id);
  const deleted = await db
    .delete(apiKeys)
    .where(and(eq(apiKeys.tenantId, principal.tenantId), eq(apiKeys.applicationId, id), eq(apiKeys.id, keyId)))
    .returning({ id: apiKeys.id });
  if (deleted.length === 0) throw new NotFoundError(`Key ${keyId}`);
  credentialsChanged();
}
