import type { Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { fromBase64, toBase64 } from "../crypto/encoding";
import { ConflictError, NotFoundError, ValidationError } from "../errors";
import { isoTime } from "../http/schemas";
import { CLIENT_KEYS } from "../limits";
import { decryptCompactJwe, encryptedHeaderOf, isOpenable, JWE_REFUSALS } from "./jwe";
import type { ClientKeyInput, ClientKeyResponse, CreatedClientKeyResponse } from "./schema";
import type { ClientKeyRow } from "./storage";
import * as storage from "./storage";

/** Additional data of the private key's ciphertext: a ciphertext moved to another key fails to decrypt. */
export const privateKeyContext = (id: string) => `client-keys/${id}/private-key`;

/** A key lives at most a year, and a year when the request names no expiry. */
const MAX_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000;

/** X25519, the curve of the original interface's client keys (its documented public key is 32 bytes). */
const ALGORITHM = { name: "X25519" };

function toClientKeyResponse(row: ClientKeyRow): ClientKeyResponse {
  return { id: row.id, key_id: row.id, expires_at: isoTime(row.expiresAt)!, created_at: isoTime(row.createdAt)! };
}

function expiryOf(input: ClientKeyInput, now: number): number {
  if (input.expires_at === undefined) return now + MAX_LIFETIME_MS;
  const expiresAt = Date.parse(input.expires_at);
  if (expiresAt <= now) throw ValidationError.field("expires_at", "must be in the future");
  if (expiresAt > now + MAX_LIFETIME_MS) throw ValidationError.field("expires_at", "must be at most one year ahead");
  return expiresAt;
}

/** The raw public key between PEM markers, as the original interface shows it. */
function publicKeyPem(raw: Uint8Array): string {
  return `-----BEGIN PUBLIC KEY-----\n${toBase64(raw)}\n-----END PUBLIC KEY-----`;
}

/**
 * Generates a key pair in the vault; the private key is stored sealed under the tenant's data key and
 * never answered, the public key is answered now and not kept. A tenant holds at most
 * CLIENT_KEYS.maxPerTenant keys, expired ones included, until it deletes some (409).
 */
export async function createClientKey(
  context: TenantContext,
  principal: Principal,
  input: ClientKeyInput,
): Promise<CreatedClientKeyResponse> {
  const now = Date.now();
  const expiresAt = expiryOf(input, now);
  const pair = (await crypto.subtle.generateKey(ALGORITHM, true, ["deriveBits"])) as CryptoKeyPair;
  const [publicKey, privateKey] = await Promise.all([
    crypto.subtle.exportKey("raw", pair.publicKey) as Promise<ArrayBuffer>,
    crypto.subtle.exportKey("pkcs8", pair.privateKey) as Promise<ArrayBuffer>,
  ]);
  const id = crypto.randomUUID();
  const keys = await context.keys();
  const row: ClientKeyRow = {
    id,
    tenantId: principal.tenantId,
    privateKeyCiphertext: await keys.encrypt(toBase64(new Uint8Array(privateKey)), privateKeyContext(id)),
    expiresAt,
    createdBy: principal.applicationId,
    createdAt: now,
  };
  const created: CreatedClientKey = { id, public_key_pem: publicKeyPem(new Uint8Array(publicKey)) };
  const inserted = await context.withControlMark(created, (mark) =>
    storage.insertClientKey(context.control, row, CLIENT_KEYS.maxPerTenant, mark),
  );
  if (!inserted) throw new ConflictError(`A tenant holds at most ${CLIENT_KEYS.maxPerTenant} client encryption keys; delete one first`);
  context.audit.describe({ entityId: id });
  return { ...toClientKeyResponse(row), public_key_pem: created.public_key_pem };
}

/** What POST /keys wrote, as its commit mark records it: the key's id and its public key, which only this answer shows. */
interface CreatedClientKey {
  id: string;
  public_key_pem: string;
}

/**
 * The answer to a POST /keys whose write was committed and whose answer was never saved: the key as
 * it is now, with its public key; a 409 when it no longer exists (deleted since, or never inserted:
 * the tenant held its most keys, which the first attempt answered).
 */
export const answerCommittedCreate = async (context: TenantContext, _principal: Principal, outcome: unknown) => {
  const created = outcome as CreatedClientKey;
  const row = await storage.findClientKey(context.control, context.tenantId, created.id);
  if (!row) throw ConflictError.processed("its key is not there: deleted since, or never made because the tenant held its most keys");
  context.audit.describe({ entityId: created.id });
  return { status: 201, body: { ...toClientKeyResponse(row), public_key_pem: created.public_key_pem } };
};

export async function listClientKeys(context: TenantContext): Promise<ClientKeyResponse[]> {
  return (await storage.clientKeysOf(context.control, context.tenantId)).map(toClientKeyResponse);
}

export async function getClientKey(context: TenantContext, id: string): Promise<ClientKeyResponse> {
  const row = await storage.findClientKey(context.control, context.tenantId, id);
  if (!row) throw new NotFoundError(`Client encryption key ${id}`);
  return toClientKeyResponse(row);
}

/** Deleting a key destroys its private key: what was encrypted to it can no longer be sent. */
export async function deleteClientKey(context: TenantContext, id: string): Promise<void> {
  if (!(await storage.deleteClientKey(context.control, context.tenantId, id))) throw new NotFoundError(`Client encryption key ${id}`);
}

/** The one refusal for a key that cannot be used: unknown, another tenant's, deleted and expired read alike. */
export const UNUSABLE_KEY_REFUSAL = "is a JWE to no client encryption key of this tenant that is live (unknown, deleted or expired)";
const NO_KID_REFUSAL = "is a JWE without a `kid` naming the client encryption key it was encrypted to";

/**
 * Opens the JWEs of one call: a value that reads as a JWE (jwe.ts) is decrypted with the tenant's
 * client key its header names; anything else is returned as it is. Each key is read and imported
 * once per call, however many values name it.
 */
export function encryptedDataOpener(context: TenantContext) {
  // Settled keys only: a map of promises could carry one request's I/O into another's context
  // (docs/architecture.md, "Isolate-wide state"); two values naming one key at once read it twice.
  const privateKeys = new Map<string, CryptoKey | null>();
  const privateKeyOf = async (id: string): Promise<CryptoKey | null> => {
    const row = await storage.findClientKey(context.control, context.tenantId, id);
    if (!row || row.expiresAt <= Date.now()) return null;
    const pkcs8 = await (await context.keys()).decrypt(row.privateKeyCiphertext, privateKeyContext(row.id));
    return crypto.subtle.importKey("pkcs8", fromBase64(pkcs8), ALGORITHM, false, ["deriveBits"]);
  };
  return async (value: unknown): Promise<{ data: unknown } | { refusal: string }> => {
    const header = encryptedHeaderOf(value);
    if (!header) return { data: value };
    if (!isOpenable(header)) return { refusal: JWE_REFUSALS.unsupported };
    if (typeof header.kid !== "string" || header.kid.length === 0) return { refusal: NO_KID_REFUSAL };
    let key = privateKeys.get(header.kid);
    if (key === undefined) {
      key = await privateKeyOf(header.kid);
      privateKeys.set(header.kid, key);
    }
    if (!key) return { refusal: UNUSABLE_KEY_REFUSAL };
    return decryptCompactJwe(value as string, key);
  };
}
