import type { AccessRule, Principal } from "../auth/access";
import { credentialsChanged } from "../auth/lookup-cache";
import { type ApplicationType, mayHold, PERMISSIONS_BY_TYPE, type Permission } from "../auth/permissions";
import type { TenantContext } from "../context";
import { generateSecret, sha256Hex } from "../crypto/secrets";
import { addFieldError, ConflictError, type FieldErrors, NotFoundError, ValidationError } from "../errors";
import { auditFieldsOf, isoTime, type ListFilter, type Page, pageOf } from "../http/schemas";
import { APPLICATIONS } from "../limits";
import type {
  ApiKeyInput,
  ApplicationGrants,
  ApplicationKeyResponse,
  ApplicationResponse,
  CreateApplication,
  NewApplicationResponse,
  UpdateApplication,
} from "./schema";
import type { ApplicationRow } from "./storage";
import * as storage from "./storage";

export const API_KEY_PREFIX = "key";
const MAX_KEYS_PER_APPLICATION = APPLICATIONS.maxKeys;

export function toApplicationResponse(row: ApplicationRow): ApplicationResponse {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    type: row.type,
    permissions: JSON.parse(row.permissions),
    rules: JSON.parse(row.rules),
    allowed_origins: JSON.parse(row.allowedOrigins),
    ...auditFieldsOf(row),
    ...(row.expiresAt === null ? {} : { expires_at: isoTime(row.expiresAt)! }),
  };
}

/**
 * Only a public application's keys are meant for browsers; a private or management key must never
 * reach one, so listing the origins it may be used from would only make that look safe.
 */
function checkAllowedOrigins(type: ApplicationType, origins: string[]): void {
  if (origins.length > 0 && type !== "public") {
    throw ValidationError.field("allowed_origins", `only a public application lists origins; a ${type} key must never reach a browser`);
  }
}

/**
 * Permissions must suit the application type, in `permissions` and in every rule. An application
 * uses either plain permissions (every container) or rules (per container), not both; its
 * `permissions` are then the union of its rules' permissions.
 */
function checkGrants(type: ApplicationType, permissions: Permission[], rules: AccessRule[]): Permission[] {
  const errors: FieldErrors = {};
  const check = (path: string, permission: Permission) => {
    if (mayHold(type, permission)) return;
    addFieldError(errors, path, `${permission} cannot be held by a ${type} application (allowed: ${PERMISSIONS_BY_TYPE[type].join(", ")})`);
  };
  permissions.forEach((permission, i) => {
    check(`permissions[${i}]`, permission);
  });
  rules.forEach((rule, i) => {
    rule.permissions.forEach((permission, j) => {
      check(`rules[${i}].permissions[${j}]`, permission);
    });
  });
  if (rules.length > 0 && permissions.length > 0) {
    errors.permissions = ["must be empty when rules are given: rules grant permissions per container"];
  }
  if (rules.length > 0 && type === "management") errors.rules = ["management applications have no container rules"];
  const priorities = new Set<number>();
  rules.forEach((rule, i) => {
    if (priorities.has(rule.priority)) addFieldError(errors, `rules[${i}].priority`, "must be unique among the rules");
    priorities.add(rule.priority);
  });
  if (Object.keys(errors).length > 0) {
    throw new ValidationError("The application's permissions are not valid for its type", errors);
  }
  const granted = rules.length > 0 ? rules.flatMap((rule) => rule.permissions) : permissions;
  return [...new Set(granted)];
}

async function newKey(tenantId: string, applicationId: string, now: number, expiresAt: number | null = null) {
  const key = generateSecret(API_KEY_PREFIX);
  const row = { id: crypto.randomUUID(), tenantId, applicationId, hash: await sha256Hex(key), createdAt: now, expiresAt };
  return { row, response: { id: row.id, key, created_at: isoTime(now)!, expires_at: isoTime(expiresAt) } };
}

/** A key's expiry: a time to come, as ISO 8601; null when none was given. */
function expiryOf(input: ApiKeyInput, now: number): number | null {
  if (input.expires_at === undefined) return null;
  const expiresAt = Date.parse(input.expires_at);
  if (expiresAt <= now) throw ValidationError.field("expires_at", "must be in the future");
  return expiresAt;
}

/**
 * An application and, unless `create_key` is false, its first key (else it gets one with POST
 * /applications/{id}/keys). The write carries the commit mark of the request's idempotency claim,
 * recording the application's id and the key (CreatedApplication), from which answerCommittedCreate
 * answers a retry of a request that stopped before its answer was saved.
 */
export async function createApplication(context: TenantContext, principal: Principal, input: CreateApplication) {
  const { create_key, ...grants } = input;
  const row = newApplicationRow(context, principal.applicationId, grants);
  const key = create_key ? await newKey(context.tenantId, row.id, row.createdAt) : null;
  const outcome: CreatedApplication = { id: row.id, key: key?.response ?? null };
  await context.withControlMark(outcome, (mark) => storage.insertApplication(context.control, row, key?.row ?? null, mark));
  return createdAnswer(context, row, outcome.key);
}

/** What POST /applications wrote, as its commit mark records it: the application's id and the key it got (null: none). */
interface CreatedApplication {
  id: string;
  key: Required<ApplicationKeyResponse> | null;
}

/**
 * The answer to a POST /applications whose write was committed and whose answer was never saved: the
 * application as it is now, with the key it was created with, as the first attempt would have shown
 * them; its creation is recorded, as that attempt's record died with it. A 409 when the application
 * was deleted since.
 */
export const answerCommittedCreate = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const created = outcome as CreatedApplication;
  const row = await storage.findApplication(context.control, context.tenantId, created.id);
  if (!row) {
    throw ConflictError.processed("the application it created was deleted since");
  }
  return { status: 201, body: createdAnswer(context, row, created.key) };
};

function createdAnswer(context: TenantContext, row: ApplicationRow, key: CreatedApplication["key"]): NewApplicationResponse {
  const application = toApplicationResponse(row);
  context.audit.describe({ entityId: row.id, event: { type: "application.created", data: { application } } });
  return key ? withNewKey(application, key) : { ...application, keys: [] };
}

/** An application of the context's tenant, with its first key; `createdBy` is null for a tenant's own. */
export async function insertApplication(context: TenantContext, createdBy: string | null, input: ApplicationGrants) {
  const row = newApplicationRow(context, createdBy, input);
  const key = await newKey(context.tenantId, row.id, row.createdAt);
  await storage.insertApplication(context.control, row, key.row);
  return withNewKey(toApplicationResponse(row), key.response);
}

/** The row of a new application, its grants checked against its type. */
function newApplicationRow(context: TenantContext, createdBy: string | null, input: ApplicationGrants): ApplicationRow {
  const permissions = checkGrants(input.type, input.permissions, input.rules);
  checkAllowedOrigins(input.type, input.allowed_origins);
  const now = Date.now();
  return {
    id: crypto.randomUUID(),
    tenantId: context.tenantId,
    name: input.name,
    type: input.type,
    permissions: JSON.stringify(permissions),
    rules: JSON.stringify(input.rules),
    allowedOrigins: JSON.stringify(input.allowed_origins),
    createdBy,
    createdAt: now,
    modifiedBy: null,
    modifiedAt: null,
    expiresAt: null,
    authorizerKeyId: null,
  };
}

/** The application as answered when a key was just made for it: the only time the key is shown. */
function withNewKey(application: ApplicationResponse, key: Required<ApplicationKeyResponse>) {
  return { ...application, key: key.key, keys: [key] };
}

async function findApplication(context: TenantContext, id: string): Promise<ApplicationRow> {
  const row = await storage.findApplication(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Application ${id}`);
  return row;
}

export async function getApplication(context: TenantContext, _principal: Principal, id: string) {
  return toApplicationResponse(await findApplication(context, id));
}

/** The applications of the tenant among `ids`, by id (for responses that embed an application). */
export async function applicationsById(context: TenantContext, ids: string[]): Promise<Map<string, ApplicationResponse>> {
  if (ids.length === 0) return new Map();
  const rows = await storage.applicationsAmong(context.control, context.tenantId, [...new Set(ids)]);
  return new Map(rows.map((row) => [row.id, toApplicationResponse(row)]));
}

export async function listApplications(
  context: TenantContext,
  _principal: Principal,
  filter: ListFilter,
): Promise<Page<ApplicationResponse>> {
  const { rows, total } = await storage.applicationsPage(context.control, context.tenantId, filter);
  return pageOf(rows.map(toApplicationResponse), total, filter.page, filter.size);
}

export async function updateApplication(context: TenantContext, principal: Principal, id: string, input: UpdateApplication) {
  const existing = await findApplication(context, id);
  if (existing.type === "expiring") {
    throw new ConflictError("An expiring application holds what its session was authorized for; it cannot be changed, only deleted");
  }
  if (input.type !== undefined && input.type !== existing.type) {
    throw ValidationError.field("type", "cannot be changed; create a new application instead");
  }
  const permissions = checkGrants(existing.type, input.permissions, input.rules);
  checkAllowedOrigins(existing.type, input.allowed_origins);
  const row = await storage.updateApplication(context.control, context.tenantId, id, {
    name: input.name,
    permissions: JSON.stringify(permissions),
    rules: JSON.stringify(input.rules),
    allowedOrigins: JSON.stringify(input.allowed_origins),
    modifiedBy: principal.applicationId,
    modifiedAt: Date.now(),
  });
  if (!row) throw new NotFoundError(`Application ${id}`);
  credentialsChanged();
  const application = toApplicationResponse(row);
  context.audit.describe({ event: { type: "application.updated", data: { application } } });
  return application;
}

/** Deletes the application and revokes all its keys at once. */
export async function deleteApplication(context: TenantContext, principal: Principal, id: string): Promise<void> {
  if (id === principal.applicationId) {
    throw new ConflictError("An application cannot delete itself; use another management application");
  }
  await findApplication(context, id);
  await storage.deleteApplication(context.control, context.tenantId, id);
  credentialsChanged();
  context.audit.describe({ event: { type: "application.deleted", data: { application: { id } } } });
}

export async function createApplicationKey(context: TenantContext, _principal: Principal, id: string, input: ApiKeyInput = {}) {
  const now = Date.now();
  const expiresAt = expiryOf(input, now);
  await findApplication(context, id);
  const full = () => new ConflictError(`An application holds at most ${MAX_KEYS_PER_APPLICATION} keys; revoke one first`);
  if ((await storage.keyCount(context.control, context.tenantId, id)) >= MAX_KEYS_PER_APPLICATION) throw full();
  const key = await newKey(context.tenantId, id, now, expiresAt);
  try {
    await context.withControlMark({ application_id: id, key: key.response } satisfies CreatedKey, (mark) =>
      storage.insertKey(context.control, key.row, MAX_KEYS_PER_APPLICATION, mark),
    );
  } catch (error) {
    // Deleted, or given its last key by another request, since it was read: nothing was written.
    if (!storage.isKeyRefusedError(error)) throw error;
    await findApplication(context, id);
    throw full();
  }
  context.audit.describe({ entityId: key.row.id, message: `for application ${id}` });
  return key.response;
}

/** What POST /applications/{id}/keys or /regenerate wrote, as its commit mark records it. */
interface CreatedKey {
  application_id: string;
  key: Required<ApplicationKeyResponse>;
}

/**
 * The answer to a POST /applications/{id}/keys whose write was committed and whose answer was never
 * saved: the key, while it still exists (a 409 once it was revoked or its application deleted).
 */
export const answerCommittedKey = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const created = outcome as CreatedKey;
  await requireKeyStill(context, created);
  context.audit.describe({ entityId: created.key.id, message: `for application ${created.application_id}` });
  return { status: 201, body: created.key };
};

/** The answer to a POST /applications/{id}/regenerate made again from its commit mark: the application as it is now, with its new key. */
export const answerCommittedRegenerate = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const created = outcome as CreatedKey;
  await requireKeyStill(context, created);
  const row = await findApplication(context, created.application_id);
  context.audit.describe({ entityId: created.key.id, message: `for application ${created.application_id}, its other keys revoked` });
  return { status: 200, body: withNewKey(toApplicationResponse(row), created.key) };
};

async function requireKeyStill(context: TenantContext, created: CreatedKey): Promise<void> {
  if (!(await storage.findKey(context.control, context.tenantId, created.application_id, created.key.id))) {
    throw ConflictError.processed("the key it created was revoked since");
  }
}

/**
 * Replaces every key of the application with one new key, in one batch: the old keys stop working
 * with the next request (docs/operations.md, "Credential lookups"), as the original interface documents.
 */
export async function regenerateApplicationKey(context: TenantContext, principal: Principal, id: string, input: ApiKeyInput = {}) {
  const now = Date.now();
  const expiresAt = expiryOf(input, now);
  await findApplication(context, id);
  const key = await newKey(context.tenantId, id, now, expiresAt);
  let row: ApplicationRow;
  try {
    row = await context.withControlMark({ application_id: id, key: key.response } satisfies CreatedKey, (mark) =>
      storage.replaceKeys(context.control, context.tenantId, id, key.row, principal.applicationId, mark),
    );
  } catch (error) {
    // Deleted since it was read: nothing was written.
    if (storage.isKeyRefusedError(error)) throw new NotFoundError(`Application ${id}`);
    throw error;
  }
  credentialsChanged();
  context.audit.describe({ entityId: key.row.id, message: `for application ${id}, its other keys revoked` });
  return withNewKey(toApplicationResponse(row), key.response);
}

/** A key as it is shown after its creation: never its plaintext, which only its creation answered. */
function toKeyResponse(row: { id: string; createdAt: number; expiresAt: number | null }): ApplicationKeyResponse {
  return { id: row.id, created_at: isoTime(row.createdAt)!, expires_at: isoTime(row.expiresAt) };
}

export async function listApplicationKeys(context: TenantContext, _principal: Principal, id: string): Promise<ApplicationKeyResponse[]> {
  await findApplication(context, id);
  const rows = await storage.keysOfApplication(context.control, context.tenantId, id);
  return rows.map(toKeyResponse);
}

export async function getApplicationKey(context: TenantContext, _principal: Principal, id: string, keyId: string) {
  await findApplication(context, id);
  const row = await storage.findKey(context.control, context.tenantId, id, keyId);
  if (!row) throw new NotFoundError(`Key ${keyId}`);
  return toKeyResponse(row);
}

export async function revokeApplicationKey(context: TenantContext, _principal: Principal, id: string, keyId: string): Promise<void> {
  await findApplication(context, id);
  if (!(await storage.deleteKey(context.control, context.tenantId, id, keyId))) throw new NotFoundError(`Key ${keyId}`);
  credentialsChanged();
}
