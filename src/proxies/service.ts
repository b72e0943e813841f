import { and, desc, eq, inArray, type SQL } from "drizzle-orm";
import type { Principal } from "../auth/access";
import { credentialsChanged, LookupCache } from "../auth/lookup-cache";
import { principalColumns, principalForApplication, principalOf } from "../auth/service";
import { generateSecret, SECRET_MAX_LENGTH, sha256Hex } from "../crypto/secrets";
import { tenantKeysOf, type TenantKeys } from "../crypto/tenant-keys";
import { databaseOf } from "../db/client";
import { nameMatches } from "../db/filters";
import { applications, proxies } from "../db/schema";
import { egressRefusal } from "../egress/policy";
import { configOf, type Bindings } from "../env";
import { NotFoundError, ValidationError } from "../http/problem";
import { auditFieldsOf, pageOf, type Page } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { publishScript, unpublishScript, validateCode, type ScriptKind } from "../sandbox";
import {
  ProxyBody,
  type ProxyConfiguration,
  type ProxyInput,
  type ProxyPatch,
  type ProxyResponse,
} from "./schema";
import { selectPage } from "../db/pages";
import { applyMergePatch } from "../http/json";

const PROXY_KEY_PREFIX = "proxy";

type ProxyRow = typeof proxies.$inferSelect;

/** Additional data of the encrypted columns: a ciphertext moved to another proxy fails to decrypt. */
const keyContext = (id: string) => `proxies/${id}/key`;
const configurationContext = (id: string) => `proxies/${id}/configuration`;

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
async function checkInput(env: Bindings, tenantId: string, input: ProxyInput): Promise<void> {
  const refusal = egressRefusal(input.destination_url, { allowInsecure: configOf(env).ALLOW_INSECURE_DESTINATIONS });
  if (refusal !== null) throw ValidationError.field("destination_url", `is not an allowed destination: ${refusal}`);
  if (input.request_transform) validateCode(input.request_transform.code, "request_transform.code");
  if (input.response_transform) validateCode(input.response_transform.code, "response_transform.code");
  if (input.application) {
    const application = await principalForApplication(databaseOf(env), tenantId, input.application.id);
    if (!application || application.applicationType === "management") {
      throw ValidationError.field("application.id", "must be a public or private application of this tenant");
    }
  }
}

type TransformKind = Extract<ScriptKind, "request-transform" | "response-transform">;

function transformsOf(input: ProxyInput): [TransformKind, string | null][] {
  return [
    ["request-transform", input.request_transform?.code ?? null],
    ["response-transform", input.response_transform?.code ?? null],
  ];
}

/**
 * Publishes the transforms a proxy has and withdraws those it no longer has. Publishing comes
 * before the row is written, so a stored transform is always runnable.
 */
async function publishTransforms(env: Bindings, tenantId: string, id: string, input: ProxyInput): Promise<void> {
  await Promise.all(
    transformsOf(input).map(([kind, code]) =>
      code === null ? null : publishScript(env, { tenantId, id, kind }, code),
    ),
  );
}

async function withdrawTransforms(env: Bindings, tenantId: string, id: string, kinds: TransformKind[]): Promise<void> {
  await Promise.all(kinds.map((kind) => unpublishScript(env, { tenantId, id, kind })));
}

/** The stored columns of an input, with the configuration encrypted. */
async function columnsOf(keys: TenantKeys, id: string, input: ProxyInput) {
  return {
    name: input.name,
    destinationUrl: input.destination_url,
    requestTransformCode: input.request_transform?.code ?? null,
    responseTransformCode: input.response_transform?.code ?? null,
    applicationId: input.application?.id ?? null,
    configuration: input.configuration
      ? await keys.encrypt(JSON.stringify(input.configuration), configurationContext(id))
      : null,
    requireAuth: input.require_auth,
  };
}

/** Creates the proxy with a new key, stored as its hash (for lookup) and encrypted (for reads). */
export async function createProxy(env: Bindings, principal: Principal, input: ProxyInput): Promise<ProxyResponse> {
  await checkInput(env, principal.tenantId, input);
  const keys = await tenantKeysOf(env, principal.tenantId);
  const id = crypto.randomUUID();
  await publishTransforms(env, principal.tenantId, id, input);
  const key = generateSecret(PROXY_KEY_PREFIX);
  const row: ProxyRow = {
    id,
    tenantId: principal.tenantId,
    keyHash: await sha256Hex(key),
    keyCiphertext: await keys.encrypt(key, keyContext(id)),
    ...(await columnsOf(keys, id, input)),
    createdBy: principal.applicationId,
    createdAt: Date.now(),
    modifiedBy: null,
    modifiedAt: null,
  };
  await databaseOf(env).insert(proxies).values(row);
  return toProxyResponse(keys, row);
}

async function findProxy(env: Bindings, tenantId: string, id: string): Promise<ProxyRow> {
  const [row] = await databaseOf(env)
    .select()
    .from(proxies)
    .where(and(eq(proxies.tenantId, tenantId), eq(proxies.id, id)))
    .limit(1);
  if (!row) throw new NotFoundError(`Proxy ${id}`);
  return row;
}

export async function getProxy(env: Bindings, principal: Principal, id: string): Promise<ProxyResponse> {
  return toProxyResponse(await tenantKeysOf(env, principal.tenantId), await findProxy(env, principal.tenantId, id));
}

export async function listProxies(
  env: Bindings,
  principal: Principal,
  filter: { id: string[]; name?: string; page: number; size: number },
): Promise<Page<ProxyResponse>> {
  const conditions: SQL[] = [eq(proxies.tenantId, principal.tenantId)];
  if (filter.id.length > 0) conditions.push(inArray(proxies.id, filter.id));
  if (filter.name) conditions.push(nameMatches(proxies.name, filter.name));
  const where = and(...conditions);
  const db = databaseOf(env);
  const { rows, total } = await selectPage(db, proxies, where, [desc(proxies.createdAt), desc(proxies.id)], filter);
  const keys = await tenantKeysOf(env, principal.tenantId);
  const data = await Promise.all(rows.map((row) => toProxyResponse(keys, row)));
  return pageOf(data, total, filter.page, filter.size);
}

/** Replaces every field but the key, which stays valid. */
export async function replaceProxy(
  env: Bindings,
  principal: Principal,
  id: string,
  input: ProxyInput,
): Promise<ProxyResponse> {
  const existing = await findProxy(env, principal.tenantId, id);
  await checkInput(env, principal.tenantId, input);
  await publishTransforms(env, principal.tenantId, id, input);
  const keys = await tenantKeysOf(env, principal.tenantId);
  const [row] = await databaseOf(env)
    .update(proxies)
    .set({ ...(await columnsOf(keys, id, input)), modifiedBy: principal.applicationId, modifiedAt: Date.now() })
    .where(and(eq(proxies.tenantId, principal.tenantId), eq(proxies.id, id)))
    .returning();
  if (!row) throw new NotFoundError(`Proxy ${id}`);
  credentialsChanged();
  const removed = transformsOf(input)
    .filter(([kind, code]) => code === null && storedTransform(existing, kind) !== null)
    .map(([kind]) => kind);
  await withdrawTransforms(env, principal.tenantId, id, removed);
  return toProxyResponse(keys, row);
}

function storedTransform(row: ProxyRow, kind: TransformKind): string | null {
  return kind === "request-transform" ? row.requestTransformCode : row.responseTransformCode;
}

/** Applies the merge patch to the stored proxy, then validates the result as a whole body. */
export async function patchProxy(
  env: Bindings,
  principal: Principal,
  id: string,
  patch: ProxyPatch,
): Promise<ProxyResponse> {
  const current = await getProxy(env, principal, id);
  const merged = {
    name: patch.name ?? current.name,
    destination_url: patch.destination_url ?? current.destination_url,
    request_transform: patch.request_transform === undefined ? current.request_transform : patch.request_transform,
    response_transform: patch.response_transform === undefined ? current.response_transform : patch.response_transform,
    application:
      patch.application === undefined
        ? current.application_id && { id: current.application_id }
        : patch.application,
    configuration: mergeConfiguration(current.configuration, patch.configuration),
    require_auth: patch.require_auth ?? current.require_auth,
  };
  const result = ProxyBody.safeParse(merged);
  if (!result.success) throw validationErrorOf(result.error);
  return replaceProxy(env, principal, id, result.data);
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
export async function deleteProxy(env: Bindings, principal: Principal, id: string): Promise<void> {
  const [deleted] = await databaseOf(env)
    .delete(proxies)
    .where(and(eq(proxies.tenantId, principal.tenantId), eq(proxies.id, id)))
    .returning();
  if (!deleted) throw new NotFoundError(`Proxy ${id}`);
  credentialsChanged();
  const kinds: TransformKind[] = ["request-transform", "response-transform"];
  await withdrawTransforms(env, principal.tenantId, id, kinds.filter((kind) => storedTransform(deleted, kind) !== null));
}

/** What invocation needs of a proxy: its row and the principal of its application, if it has one. */
export interface InvocableProxy extends ProxyRow {
  application: Principal | null;
}

/**
 * Recent proxies, by their key. An entry holds transform code, an encrypted configuration and the
 * application's rules, so it is weighed by the characters it holds, not only counted.
 */
const recentProxies = new LookupCache<InvocableProxy | null>({ entries: 500, weight: 4_000_000 }, (proxy) =>
  JSON.stringify(proxy).length,
);

/**
 * The proxy a key invokes (null for an unknown key) with the principal of its application. One
 * statement, and an isolate reuses a found proxy for `CREDENTIAL_CACHE_TTL_MS` (see LookupCache for
 * how staleness is bounded). Keyed by the key itself, which this isolate holds for the request
 * anyway, so that a reused lookup costs no hashing. A proxy whose application was deleted acts as
 * one without an application.
 */
export async function proxyForKey(env: Bindings, proxyKey: string): Promise<InvocableProxy | null> {
  if (proxyKey.length > SECRET_MAX_LENGTH) return null;
  return recentProxies.lookup(
    proxyKey,
    configOf(env).CREDENTIAL_CACHE_TTL_MS,
    async () => readInvocableProxy(env, await sha256Hex(proxyKey)),
    (proxy) => proxy !== null,
  );
}

async function readInvocableProxy(env: Bindings, keyHash: string): Promise<InvocableProxy | null> {
  const [found] = await databaseOf(env)
    .select({
      proxy: proxies,
      application: principalColumns,
    })
    .from(proxies)
    .leftJoin(applications, and(eq(applications.tenantId, proxies.tenantId), eq(applications.id, proxies.applicationId)))
    .where(eq(proxies.keyHash, keyHash))
    .limit(1);
  if (!found) return null;
  return { ...found.proxy, application: found.application ? principalOf(found.application) : null };
}

/** The proxy's configuration for its transforms, decrypted; empty when it has none. */
export async function configurationOf(env: Bindings, proxy: InvocableProxy): Promise<ProxyConfiguration> {
  return (await decryptConfiguration(await tenantKeysOf(env, proxy.tenantId), proxy)) ?? {};
}
