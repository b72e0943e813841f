import { configOf } from "../env";
import { fromBase64, fromBase64Url, fromUtf8, toBase64Url, utf8 } from "./encoding";

/** Version of the master key that new ciphertexts are written under; recorded in each ciphertext. */
export const CURRENT_KEY_VERSION = 1;

type Purpose = "encryption" | "search-index" | "fingerprint" | "audit";

/**
 * Per-tenant keys derived with HKDF-SHA256 from VAULT_MASTER_KEY. Each purpose has its own key,
 * so a blind index can never be compared with a fingerprint of the same value.
 */
export class TenantKeys {
  private constructor(
    readonly tenantId: string,
    private readonly encryptionKey: CryptoKey,
    private readonly searchIndexKey: CryptoKey,
    private readonly fingerprintKey: CryptoKey,
    private readonly auditKey: CryptoKey,
  ) {}

  static async derive(masterKeyBase64: string, tenantId: string): Promise<TenantKeys> {
    const cacheKey = `${masterKeyBase64}\u0000${tenantId}`;
    const cached = cache.get(cacheKey);
    if (cached) return cached;
    const master = await crypto.subtle.importKey("raw", fromBase64(masterKeyBase64), "HKDF", false, ["deriveKey"]);
    const derive = (purpose: Purpose, algorithm: SubtleCryptoDeriveKeyAlgorithm | SubtleCryptoImportKeyAlgorithm, usages: string[]) =>
      crypto.subtle.deriveKey(
        {
          name: "HKDF",
          hash: "SHA-256",
          salt: utf8.encode(`token-vault/v${CURRENT_KEY_VERSION}`),
          info: utf8.encode(`${purpose}/${tenantId}`),
        },
        master,
        algorithm,
        false,
        usages,
      );
    const hmac = { name: "HMAC", hash: "SHA-256", length: 256 };
    const keys = new TenantKeys(
      tenantId,
      await derive("encryption", { name: "AES-GCM", length: 256 }, ["encrypt", "decrypt"]),
      await derive("search-index", hmac, ["sign"]),
      await derive("fingerprint", hmac, ["sign"]),
      await derive("audit", hmac, ["sign"]),
    );
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(cacheKey, keys);
    return keys;
  }

  /**
   * AES-256-GCM with a random 96-bit IV. `context` (the record id) is authenticated as
   * additional data, so a ciphertext copied onto another record fails to decrypt.
   */
  async encrypt(plaintext: string, context: string): Promise<string> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: this.aad(context) },
      this.encryptionKey,
      utf8.encode(plaintext),
    );
    return `v${CURRENT_KEY_VERSION}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(sealed))}`;
  }

  async decrypt(ciphertext: string, context: string): Promise<string> {
    const [version, iv, sealed] = ciphertext.split(".");
    if (version !== `v${CURRENT_KEY_VERSION}` || !iv || !sealed) {
      throw new Error(`Unsupported ciphertext version ${version}`);
    }
    const opened = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64Url(iv), additionalData: this.aad(context) },
      this.encryptionKey,
      fromBase64Url(sealed),
    );
    return fromUtf8.decode(opened);
  }

  /** Keyed HMAC of the lower-cased value: what `data:` search compares, never the value itself. */
  blindIndex(value: string): Promise<string> {
    return this.sign(this.searchIndexKey, value.toLowerCase());
  }

  /**
   * Keyed HMAC of the token type and the evaluated fingerprint expression: the same content gives
   * one fingerprint within a type and different ones across types (an SSN and an EIN with the same
   * digits). NUL cannot occur in a type name, so the pair is unambiguous.
   */
  fingerprint(type: string, source: string): Promise<string> {
    return this.sign(this.fingerprintKey, `${type}\u0000${source}`);
  }

  /** Keyed HMAC that links the audit log's hash chain (src/audit/chain.ts). */
  auditMac(value: string): Promise<string> {
    return this.sign(this.auditKey, value);
  }

  private async sign(key: CryptoKey, value: string): Promise<string> {
    return toBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8.encode(value))));
  }

  private aad(context: string): Uint8Array {
    return utf8.encode(`${this.tenantId}/${context}`);
  }
}

const CACHE_LIMIT = 1024;
const cache = new Map<string, TenantKeys>();

/** The tenant's keys under the deployment's master key. */
export function tenantKeysOf(env: object, tenantId: string): Promise<TenantKeys> {
  return TenantKeys.derive(configOf(env).VAULT_MASTER_KEY, tenantId);
}
