import type { Principal } from "../auth/access";
import { credentialsChanged, LookupCache } from "../auth/lookup-cache";
import { principalOf, requireActingApplication } from "../auth/service";
import type { RequestContext, ScriptKind, ScriptOwner, TenantContext } from "../context";
import { generateSecret, SECRET_MAX_LENGTH, sha256Hex } from "../crypto/secrets";
import type { TenantKeys } from "../crypto/tenant-keys";
import type { Database } from "../db/client";
import { egressRefusal } from "../egress/policy";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { applyMergePatch } from "../http/json";
import { auditFieldsOf, isoTime, type ListFilter, type Page, pageOf } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { validateCode } from "../sandbox";
import { ProxyBody, type ProxyConfiguration, type ProxyInput, type ProxyPatch, type ProxyResponse, type RollKeyInput } from "./schema";
import type { ProxyRow } from "./storage";
import * as storage from "./storage";

const PROXY_KEY_PREFIX = "proxy";

/** Additional data of the encrypted columns: a ciphertext moved to another proxy fails to decrypt. */
export const keyContext = (id: string) => `proxies/${id}/key`;
export const configurationContext = (id: string) => `proxies/${id}/configuration`;

async function decryptConfiguration(keys: TenantKeys, row: Pick<ProxyRow, "id" | "configuration">) {
  if (row.configuration === null) return null;
  return JSON.parse(await keys.decrypt(row.configuration, configurationContext(row.id))) as ProxyConfiguration;
}

async function toProxyResponse(keys: TenantKeys, row: ProxyRow): Promise<ProxyResponse> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    name: row.name,
    key: await keys.decrypt(row.keyCiphertext, keyContext(row.id)),
    destination_url: row.destinationUrl,
    request_transform: row.requestTransformCode === null ? null : { code: row.requestTransformCode },
    response_transform: row.responseTransformCode === null ? null : { code: row.responseTransformCode },
    application_id: row.applicationId,
    configuration: await decryptConfiguration(keys, row),
    require_auth: row.requireAuth,
    ...auditFieldsOf(row),
  };
}

/**
 * Everything the schema cannot decide alone: the egress policy, the application's tenant and type,
 * and whether the sandbox accepts the transforms' code.
 */
async function checkInput(context: TenantContext, input: ProxyInput): Promise<void> {
  const refusal = egressRefusal(input.destination_url, { allowInsecure: context.config.ALLOW_INSECURE_DESTINATIONS });
  if (refusal !== null) throw ValidationError.field("destination_url", `is not an allowed destination: ${refusal}`);
  if (input.request_transform) validateCode(input.request_transform.code, "request_transform.code");
  if (input.response_transform) validateCode(input.response_transform.code, "response_transform.code");
  if (input.application) await requireActingApplication(context, input.application.id);
}

type TransformKind = Extract<ScriptKind, "request-transform" | "response-transform">;

function transformsOf(input: ProxyInput): [TransformKind, string | null][] {
  return [
    ["request-transform", input.request_transform?.code ?? null],
    ["response-transform", input.response_transform?.code ?? null],
  ];
}

/**
 * Publishes the transforms a proxy has. Publishing comes before the row is written, so a stored
 * transform is always runnable; those it no longer has are left to the sandbox's cron.
 */
async function publishTransforms(context: TenantContext, id: string, input: ProxyInput): Promise<void> {
  const { tenantId } = context;
  await Promise.all(
    transformsOf(input).map(([kind, code]) => (code === null ? null : context.sandbox.publish({ tenantId, id, kind }, code))),
  );
}

/** The transform a proxy runs now, as stored (null: the proxy is gone or has none): what the sandbox's cron keeps. */
export async function currentTransformCode(control: Database, owner: ScriptOwner): Promise<string | null> {
  if (owner.tenantId === null || owner.kind === "reactor") return null;
  const row = await storage.findProxy(control, owner.tenantId, owner.id);
  return row ? storedTransform(row, owner.kind) : null;
}

/** The stored columns of an input, with the configuration encrypted. */
async function columnsOf(keys: TenantKeys, id: string, input: ProxyInput) {
  return {
    name: input.name,
    destinationUrl: input.destination_url,
    requestTransformCode: input.request_transform?.code ?? null,
    responseTransformCode: input.response_transform?.code ?? null,
    applicationId: input.application?.id ?? null,
    configuration: input.configuration ? await keys.encrypt(JSON.stringify(input.configuration), configurationContext(id)) : null,
    requireAuth: input.require_auth,
  };
}

/** Creates the proxy with a new key, stored as its hash (for lookup) and encrypted (for reads). */
export async function createProxy(context: TenantContext, principal: Principal, input: ProxyInput): Promise<ProxyResponse> {
  await checkInput(context, input);
  const keys = await context.keys();
  const id = crypto.randomUUID();
  await publishTransforms(context, id, input);
  const key = generateSecret(PROXY_KEY_PREFIX);
  const row: ProxyRow = {
    id,
    tenantId: principal.tenantId,
    keyHash: await sha256Hex(key),
    keyCiphertext: await keys.encrypt(key, keyContext(id)),
    previousKeyHash: null,
    previousKeyExpiresAt: null,
    ...(await columnsOf(keys, id, input)),
    createdBy: principal.applicationId,
    createdAt: Date.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  await context.withControlMark({ id } satisfies WrittenProxy, (mark) => storage.insertProxy(context.control, row, mark));
  return createdAnswer(context, keys, row);
}

async function createdAnswer(context: TenantContext, keys: TenantKeys, row: ProxyRow): Promise<ProxyResponse> {
  const created = await toProxyResponse(keys, row);
  context.audit.describe({ entityId: row.id, event: { type: "proxy.created", data: proxyEventData(created) } });
  return created;
}

/** What POST /proxies or /proxies/{id}/key wrote, as its commit mark records it: the proxy, and the hash of the key it gave it. */
interface WrittenProxy {
  id: string;
  keyHash?: string;
}

/**
 * The answer to a POST /proxies whose write was committed and whose answer was never saved: the proxy
 * as it was created (its key included), recorded in the audit log again as the attempt's record died
 * with it; a 409 when it was deleted or changed since. A key rolled or a configuration replaced since
 * is for a read (proxy:read) to show, not for its creator's retry.
 */
export const answerCommittedCreate = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const row = await storage.findProxy(context.control, context.tenantId, (outcome as WrittenProxy).id);
  if (!row) throw ConflictError.processed("the proxy it created was deleted since");
  if (row.modifiedAt !== null) {
    throw ConflictError.processed("the proxy it created was changed since: read it");
  }
  return { status: 201, body: await createdAnswer(context, await context.keys(), row) };
};

/**
 * The answer to a POST /proxies/{id}/key made again from its commit mark: the proxy as it is now,
 * while it still holds the key this request gave it. Otherwise a 409: the key was rolled again since,
 * or the roll never applied (another roll won the race, and the first attempt answered that 409).
 */
export const answerCommittedRoll = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const written = outcome as WrittenProxy;
  const row = await storage.findProxy(context.control, context.tenantId, written.id);
  if (!row || row.keyHash !== written.keyHash) {
    throw new ConflictError(`Proxy ${written.id}'s key was rolled or the proxy deleted meanwhile; read it and try again`);
  }
  return { status: 200, body: await rolledAnswer(context, await context.keys(), row) };
};

/** A proxy as webhook events describe it: never its key, configuration or transform code. */
function proxyEventData(proxy: ProxyResponse): Record<string, unknown> {
  const { id, name, destination_url, require_auth, application_id, created_by, created_at, modified_by, modified_at } = proxy;
  return { proxy: { id, name, destination_url, require_auth, application_id, created_by, created_at, modified_by, modified_at } };
}

async function findProxy(context: TenantContext, id: string): Promise<ProxyRow> {
  const row = await storage.findProxy(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Proxy ${id}`);
  return row;
}

export async function getProxy(context: TenantContext, _principal: Principal, id: string): Promise<ProxyResponse> {
  return toProxyResponse(await context.keys(), await findProxy(context, id));
}

export async function listProxies(context: TenantContext, _principal: Principal, filter: ListFilter): Promise<Page<ProxyResponse>> {
  const { rows, total } = await storage.proxiesPage(context.control, context.tenantId, filter);
  const keys = await context.keys();
  const data = await Promise.all(rows.map((row) => toProxyResponse(keys, row)));
  return pageOf(data, total, filter.page, filter.size);
}

/** Replaces every field but the key, which stays valid. */
export async function replaceProxy(context: TenantContext, principal: Principal, id: string, input: ProxyInput): Promise<ProxyResponse> {
  await findProxy(context, id);
  await checkInput(context, input);
  await publishTransforms(context, id, input);
  const keys = await context.keys();
  const row = await storage.updateProxy(context.control, context.tenantId, id, {
    ...(await columnsOf(keys, id, input)),
    modifiedBy: principal.applicationId,
    modifiedAt: Date.now(),
  });
  if (!row) throw new NotFoundError(`Proxy ${id}`);
  credentialsChanged();
  const replaced = await toProxyResponse(keys, row);
  context.audit.describe({ event: { type: "proxy.updated", data: proxyEventData(replaced) } });
  return replaced;
}

function storedTransform(row: ProxyRow, kind: TransformKind): string | null {
  return kind === "request-transform" ? row.requestTransformCode : row.responseTransformCode;
}

/** Applies the merge patch to the stored proxy, then validates the result as a whole body. */
export async function patchProxy(context: TenantContext, principal: Principal, id: string, patch: ProxyPatch): Promise<ProxyResponse> {
  const current = await getProxy(context, principal, id);
  const merged = {
    name: patch.name ?? current.name,
    destination_url: patch.destination_url ?? current.destination_url,
    request_transform: patch.request_transform === undefined ? current.request_transform : patch.request_transform,
    response_transform: patch.response_transform === undefined ? current.response_transform : patch.response_transform,
    application: patch.application === undefined ? current.application_id && { id: current.application_id } : patch.application,
    configuration: mergeConfiguration(current.configuration, patch.configuration),
    require_auth: patch.require_auth ?? current.require_auth,
  };
  const result = ProxyBody.safeParse(merged);
  if (!result.success) throw validationErrorOf(result.error);
  return replaceProxy(context, principal, id, result.data);
}

function mergeConfiguration(
  current: ProxyConfiguration | null,
  patch: Record<string, string | null> | null | undefined,
): ProxyConfiguration | null {
  if (patch === undefined) return current;
  if (patch === null) return null;
  return applyMergePatch(current ?? {}, patch) as ProxyConfiguration;
}

/** The key stops working with the delete (in other isolates within CREDENTIAL_CACHE_TTL_MS). */
export async function deleteProxy(context: TenantContext, _principal: Principal, id: string): Promise<void> {
  const deleted = await storage.deleteProxy(context.control, context.tenantId, id);
  if (!deleted) throw new NotFoundError(`Proxy ${id}`);
  credentialsChanged();
  context.audit.describe({ event: { type: "proxy.deleted", data: { proxy: { id } } } });
}

/** What invocation needs of a proxy: its row and the principal of its application, if it has one. */
export interface InvocableProxy extends ProxyRow {
  application: Principal | null;
  /** When the key it was found by stops working: the end of a rolled key's grace period; null: never. */
  keyValidUntil: number | null;
}

/**
 * Recent proxies, by their key. An entry holds transform code, an encrypted configuration and the
 * application's rules, so it is weighed by the characters it holds, not only counted.
 */
const recentProxies = new LookupCache<InvocableProxy | null>({ entries: 500, weight: 4_000_000 }, (proxy) => JSON.stringify(proxy).length);

/**
 * The proxy a key invokes (null for an unknown key) with the principal of its application. One
 * statement, and an isolate reuses a found proxy for `CREDENTIAL_CACHE_TTL_MS` (see LookupCache for
 * how staleness is bounded). Keyed by the key itself, which this isolate holds for the request
 * anyway, so that a reused lookup costs no hashing. A proxy whose application was deleted acts as
 * one without an application.
 */
export async function proxyForKey(context: RequestContext, proxyKey: string): Promise<InvocableProxy | null> {
  if (proxyKey.length > SECRET_MAX_LENGTH) return null;
  const proxy = await recentProxies.lookup(
    proxyKey,
    context.config.CREDENTIAL_CACHE_TTL_MS,
    async () => {
      const hash = await sha256Hex(proxyKey);
      const found = await storage.proxyOfKeyHash(context.control, hash, Date.now());
      if (!found) return null;
      const keyValidUntil = found.proxy.keyHash === hash ? null : found.proxy.previousKeyExpiresAt;
      return { ...found.proxy, application: found.application ? principalOf(found.application) : null, keyValidUntil };
    },
    (found) => found !== null,
  );
  // A rolled key's grace period ends on time, also for a lookup this isolate reuses.
  return proxy && (proxy.keyValidUntil === null || proxy.keyValidUntil > Date.now()) ? proxy : null;
}

/**
 * Gives the proxy a new key. The previous key keeps working for `grace_period_seconds` (none by
 * default: it stops with the next request), so partners holding it can switch over.
 */
export async function rollProxyKey(context: TenantContext, principal: Principal, id: string, input: RollKeyInput): Promise<ProxyResponse> {
  const existing = await findProxy(context, id);
  const keys = await context.keys();
  const now = Date.now();
  const grace = input.grace_period_seconds ?? 0;
  const previousUntil = grace > 0 ? now + grace * 1000 : null;
  const key = generateSecret(PROXY_KEY_PREFIX);
  const keyHash = await sha256Hex(key);
  const changes = {
    keyHash,
    keyCiphertext: await keys.encrypt(key, keyContext(id)),
    previousKeyHash: previousUntil === null ? null : existing.keyHash,
    previousKeyExpiresAt: previousUntil,
    modifiedBy: principal.applicationId,
    modifiedAt: now,
  };
  const row = await context.withControlMark({ id, keyHash } satisfies WrittenProxy, (mark) =>
    storage.rollKey(context.control, context.tenantId, id, existing.keyHash, changes, mark),
  );
  if (!row) throw new ConflictError(`Proxy ${id}'s key was rolled or the proxy deleted meanwhile; read it and try again`);
  credentialsChanged();
  return rolledAnswer(context, keys, row);
}

async function rolledAnswer(context: TenantContext, keys: TenantKeys, row: ProxyRow): Promise<ProxyResponse> {
  const rolled = await toProxyResponse(keys, row);
  const previousUntil = row.previousKeyExpiresAt;
  context.audit.describe({
    message: previousUntil === null ? "the previous key stopped at once" : `the previous key works until ${isoTime(previousUntil)}`,
    event: { type: "proxy.updated", data: proxyEventData(rolled) },
  });
  return rolled;
}

/** The proxy's configuration for its transforms, decrypted; empty when it has none. */
export async function configurationOf(context: TenantContext, proxy: InvocableProxy): Promise<ProxyConfiguration> {
  return (await decryptConfiguration(await context.keys(), proxy)) ?? {};
}
