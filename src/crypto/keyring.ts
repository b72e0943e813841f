import type { KeyEncryptionKey } from "../env";
import { ConfigurationError } from "../errors";
import { deriveBytes, importMasterKey } from "./derive";
import { fromBase64, fromBase64Url, toBase64Url, utf8 } from "./encoding";
import { derivedMaterial } from "./tenant-keys";

/**
 * The deployment's key-encryption keys (VAULT_MASTER_KEYS, or VAULT_MASTER_KEY as version 1). They
 * never encrypt data: they wrap each tenant's data keys (AES-256-GCM, the tenant and data-key
 * version authenticated), so replacing one re-wraps a few bytes per tenant and touches no token.
 */
export class Keyring {
  /** Imported keys, settled only (docs/architecture.md, "Isolate-wide state"). */
  private readonly keys = new Map<number, CryptoKey>();
  private entrypointPropsKey: CryptoKey | undefined;

  private constructor(private readonly entries: KeyEncryptionKey[]) {}

  /** One keyring per configuration, so the imported keys are reused. */
  static of(entries: KeyEncryptionKey[]): Keyring {
    const id = entries.map(({ version, key }) => `${version}:${key}`).join(",");
    let keyring = keyrings.get(id);
    if (!keyring) {
      keyring = new Keyring(entries);
      keyrings.set(id, keyring);
    }
    return keyring;
  }

  /** The version that wraps: the highest. */
  get wrappingVersion(): number {
    return this.entries[0]!.version;
  }

  /** Every version held, highest first. */
  get versions(): number[] {
    return this.entries.map((entry) => entry.version);
  }

  /** `k{kek}.{iv}.{sealed}`: the material sealed under the wrapping key. */
  async wrap(material: Uint8Array, tenantId: string, version: number): Promise<{ kekVersion: number; wrapped: string }> {
    const kekVersion = this.wrappingVersion;
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: aad(tenantId, version) },
      await this.key(kekVersion),
      material,
    );
    return { kekVersion, wrapped: `k${kekVersion}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(sealed))}` };
  }

  async unwrap(wrapped: string, tenantId: string, version: number): Promise<Uint8Array> {
    const [kek, iv, sealed] = wrapped.split(".");
    const kekVersion = Number(kek?.slice(1));
    if (!kek?.startsWith("k") || !iv || !sealed) throw new Error(`Tenant ${tenantId}'s data keys v${version} are not wrapped keys`);
    const opened = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64Url(iv), additionalData: aad(tenantId, version) },
      await this.key(kekVersion, tenantId),
      fromBase64Url(sealed),
    );
    return new Uint8Array(opened);
  }

  /** The version-1 material of a tenant created before envelope encryption, derived from keyring version 1. */
  derivedMaterial(tenantId: string): Promise<Uint8Array> {
    const first = this.entries.find((entry) => entry.version === 1);
    if (!first) {
      throw new ConfigurationError(
        `Tenant ${tenantId}'s keys derive from version 1 of the keyring, which is gone: restore it and run POST /operator/keys/rewrap before removing it`,
      );
    }
    return derivedMaterial(fromBase64(first.key), tenantId);
  }

  /**
   * The HMAC key that signs the props the vault gives its Bridge and Egress entrypoints, derived
   * from the wrapping key once per keyring, and so once per isolate.
   */
  async propsKey(): Promise<CryptoKey> {
    if (!this.entrypointPropsKey) {
      const master = await importMasterKey(fromBase64(this.entries[0]!.key));
      const bytes = await deriveBytes(master, "entrypoint-props", 32);
      this.entrypointPropsKey = await crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    }
    return this.entrypointPropsKey;
  }

  private async key(version: number, tenantId?: string): Promise<CryptoKey> {
    let key = this.keys.get(version);
    if (!key) {
      const entry = this.entries.find((candidate) => candidate.version === version);
      if (!entry) {
        throw new ConfigurationError(
          `Version ${version} of the keyring wraps ${tenantId ? `tenant ${tenantId}'s` : "some"} data keys but is not in VAULT_MASTER_KEYS`,
        );
      }
      key = await crypto.subtle.importKey("raw", fromBase64(entry.key), { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
      this.keys.set(version, key);
    }
    return key;
  }
}

const keyrings = new Map<string, Keyring>();

function aad(tenantId: string, version: number): Uint8Array {
  return utf8.encode(`tenant-keys/${tenantId}/v${version}`);
}
