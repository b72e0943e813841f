import { deriveBytes, importMasterKey } from "./derive";
import { fromBase64Url, fromUtf8, toBase64Url, utf8 } from "./encoding";

/** The four keys of one data-key version, in the order their bytes are wrapped together. */
const PURPOSES = ["encryption", "search-index", "fingerprint", "audit"] as const;
type Purpose = (typeof PURPOSES)[number];

/** A list cursor's random IV and its authentication tag (AES-GCM). */
const CURSOR_IV_BYTES = 12;
const CURSOR_TAG_BYTES = 16;

/** Bytes of each data key; a version's material is the four keys end to end. */
const DATA_KEY_BYTES = 32;
const MATERIAL_BYTES = DATA_KEY_BYTES * PURPOSES.length;

/** Where a purpose's key starts within a version's material. */
const offsetOf = (purpose: Purpose) => DATA_KEY_BYTES * PURPOSES.indexOf(purpose);

/** One purpose's key bytes within a version's material. */
function keyBytes(material: Uint8Array, purpose: Purpose): Uint8Array {
  return material.slice(offsetOf(purpose), offsetOf(purpose) + DATA_KEY_BYTES);
}

/** Random material for a new data-key version; the audit key is carried over, so the audit chain outlives rotations. */
export function newMaterial(carriedAuditKey?: Uint8Array): Uint8Array {
  const material = crypto.getRandomValues(new Uint8Array(MATERIAL_BYTES));
  if (carriedAuditKey) material.set(carriedAuditKey, offsetOf("audit"));
  return material;
}

/** The audit key's bytes within a version's material. */
export function auditKeyOf(material: Uint8Array): Uint8Array {
  return keyBytes(material, "audit");
}

/**
 * The version-1 material of a tenant created before envelope encryption: what HKDF-SHA256 derived
 * from the master key for each purpose, byte for byte, so its existing ciphertexts, blind indexes,
 * fingerprints and audit chain stay valid once the material is stored wrapped.
 */
export async function derivedMaterial(masterKey: Uint8Array, tenantId: string): Promise<Uint8Array> {
  const master = await importMasterKey(masterKey);
  const material = new Uint8Array(MATERIAL_BYTES);
  for (const purpose of PURPOSES) {
    material.set(await deriveBytes(master, `${purpose}/${tenantId}`, DATA_KEY_BYTES), offsetOf(purpose));
  }
  return material;
}

/** One version of a tenant's data keys, imported for use. */
export class DataKeys {
  private constructor(
    readonly version: number,
    readonly encryption: CryptoKey,
    readonly searchIndex: CryptoKey,
    readonly fingerprint: CryptoKey,
    readonly audit: CryptoKey,
    readonly sessionNonce: CryptoKey,
    readonly listCursor: CryptoKey,
  ) {}

  static async import(version: number, material: Uint8Array): Promise<DataKeys> {
    const hmac = (purpose: Purpose) =>
      crypto.subtle.importKey("raw", keyBytes(material, purpose), { name: "HMAC", hash: "SHA-256", length: 256 }, false, ["sign"]);
    return new DataKeys(
      version,
      await crypto.subtle.importKey("raw", keyBytes(material, "encryption"), { name: "AES-GCM", length: 256 }, false, [
        "encrypt",
        "decrypt",
      ]),
      await hmac("search-index"),
      await hmac("fingerprint"),
      await hmac("audit"),
      await derivedKey(material, SESSION_NONCE_INFO, { name: "HMAC", hash: "SHA-256", length: 256 }, ["sign", "verify"]),
      await derivedKey(material, LIST_CURSOR_INFO, { name: "AES-GCM", length: 256 }, ["encrypt", "decrypt"]),
    );
  }
}

/** HKDF infos of the derived keys: no slash, so they never meet a tenant's `<purpose>/<tenant id>`. */
const SESSION_NONCE_INFO = "session-nonce";
const LIST_CURSOR_INFO = "list-cursor";

/**
 * A key derived from the version's whole material by HKDF (the key that signs session nonces, the
 * one that seals list cursors): as random as the data keys, unrelated to each of them, and gone
 * with them when the version is destroyed or the tenant shredded. Derived rather than stored, so
 * the wrapped record keeps its four keys.
 */
async function derivedKey(
  material: Uint8Array,
  info: string,
  algorithm: SubtleCryptoImportKeyAlgorithm,
  usages: string[],
): Promise<CryptoKey> {
  const source = await crypto.subtle.importKey("raw", material, "HKDF", false, ["deriveBits"]);
  const bytes = await deriveBytes(source, info, DATA_KEY_BYTES);
  return crypto.subtle.importKey("raw", bytes, algorithm, false, usages);
}

/** The data-key version a ciphertext was made with (`v{version}.…`). */
export function ciphertextVersion(ciphertext: string): number {
  return Number(ciphertext.slice(1, ciphertext.indexOf(".")));
}

/** A ciphertext names a data-key version the tenant no longer (or does not yet) hold. */
export class UnknownKeyVersionError extends Error {
  constructor(readonly version: string) {
    super(`No data key of version ${version}`);
  }
}

/**
 * A tenant's data keys: every version it holds, the highest of which writes. Each purpose has its
 * own key, so a blind index can never be compared with a fingerprint of the same value. While a
 * rotation runs the tenant holds two versions: reads decrypt either, and `data:` search and
 * deduplication compare the values of both.
 */
export class TenantKeys {
  readonly current: DataKeys;

  constructor(
    readonly tenantId: string,
    private readonly versions: DataKeys[],
  ) {
    if (versions.length === 0) throw new Error(`Tenant ${tenantId} holds no data keys`);
    this.current = versions.reduce((highest, keys) => (keys.version > highest.version ? keys : highest));
  }

  /** The versions held, highest first. */
  get heldVersions(): number[] {
    return this.versions.map((keys) => keys.version).sort((a, b) => b - a);
  }

  /**
   * AES-256-GCM with a random 96-bit IV, under the current version (or the one given). `context`
   * (the record id) is authenticated as additional data, so a ciphertext copied onto another
   * record fails to decrypt.
   */
  async encrypt(plaintext: string, context: string, version = this.current.version): Promise<string> {
    const keys = this.keysOf(String(version));
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: this.aad(context) },
      keys.encryption,
      utf8.encode(plaintext),
    );
    return `v${keys.version}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(sealed))}`;
  }

  async decrypt(ciphertext: string, context: string): Promise<string> {
    const [version, iv, sealed] = ciphertext.split(".");
    if (!version?.startsWith("v") || !iv || !sealed) throw new Error(`Unsupported ciphertext version ${version}`);
    const opened = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64Url(iv), additionalData: this.aad(context) },
      this.keysOf(version.slice(1)).encryption,
      fromBase64Url(sealed),
    );
    return fromUtf8.decode(opened);
  }

  /** Keyed HMAC of the lower-cased value under the current version: what a token's search index stores. */
  blindIndex(value: string): Promise<string> {
    return sign(this.current.searchIndex, value.toLowerCase());
  }

  /** The value's blind index under every version held: what `data:` search compares. */
  blindIndexes(value: string): Promise<string[]> {
    return Promise.all(this.versions.map((keys) => sign(keys.searchIndex, value.toLowerCase())));
  }

  /**
   * Keyed HMAC of the token type and the evaluated fingerprint expression: the same content gives
   * one fingerprint within a type and different ones across types (an SSN and an EIN with the same
   * digits). NUL cannot occur in a type name, so the pair is unambiguous.
   */
  fingerprint(type: string, source: string): Promise<string> {
    return sign(this.current.fingerprint, `${type}\u0000${source}`);
  }

  /** The fingerprint under every version held, the current one first: what deduplication compares. */
  fingerprints(type: string, source: string): Promise<string[]> {
    const ordered = [this.current, ...this.versions.filter((keys) => keys !== this.current)];
    return Promise.all(ordered.map((keys) => sign(keys.fingerprint, `${type}\u0000${source}`)));
  }

  /**
   * The MAC of a session nonce's content (src/sessions/nonce.ts) under the current version, bound to
   * this tenant: another tenant's nonce never verifies here.
   */
  async signSessionNonce(content: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(await crypto.subtle.sign("HMAC", this.current.sessionNonce, this.sessionNonceText(content)));
  }

  /** Whether `mac` is the MAC of the content under a version this tenant holds (a rotation may have begun since it was signed). */
  async verifiesSessionNonce(content: Uint8Array, mac: Uint8Array): Promise<boolean> {
    const text = this.sessionNonceText(content);
    for (const keys of this.versions) {
      if (await crypto.subtle.verify("HMAC", keys.sessionNonce, mac, text)) return true;
    }
    return false;
  }

  /**
   * Seals a list cursor's content (src/db/cursors.ts) with AES-256-GCM under the current version's
   * cursor key: `iv ‖ ciphertext ‖ tag`. The content is unreadable to the client, and `binding` (the
   * list and the request it continues) is authenticated with this tenant's id as additional data.
   */
  async sealCursor(content: Uint8Array, binding: string): Promise<Uint8Array> {
    const iv = crypto.getRandomValues(new Uint8Array(CURSOR_IV_BYTES));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: this.cursorBinding(binding) },
      this.current.listCursor,
      content,
    );
    const cursor = new Uint8Array(CURSOR_IV_BYTES + sealed.byteLength);
    cursor.set(iv);
    cursor.set(new Uint8Array(sealed), CURSOR_IV_BYTES);
    return cursor;
  }

  /**
   * The content of a cursor sealed for `binding` under a version this tenant holds; null for
   * anything else (altered, forged, another tenant's, another list's or another request's).
   */
  async openCursor(cursor: Uint8Array, binding: string): Promise<Uint8Array | null> {
    if (cursor.length < CURSOR_IV_BYTES + CURSOR_TAG_BYTES) return null;
    const iv = cursor.subarray(0, CURSOR_IV_BYTES);
    const additionalData = this.cursorBinding(binding);
    for (const keys of this.versions) {
      try {
        const opened = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv, additionalData },
          keys.listCursor,
          cursor.subarray(CURSOR_IV_BYTES),
        );
        return new Uint8Array(opened);
      } catch {
        // Not sealed under this version (or not by this tenant at all): try the next one.
      }
    }
    return null;
  }

  /** Keyed HMAC that links the audit log's hash chain (src/audit/chain.ts); every version carries the same audit key. */
  auditMac(value: string): Promise<string> {
    return sign(this.current.audit, value);
  }

  private keysOf(version: string): DataKeys {
    const keys = this.versions.find((candidate) => String(candidate.version) === version);
    if (!keys) throw new UnknownKeyVersionError(version);
    return keys;
  }

  private aad(context: string): Uint8Array {
    return utf8.encode(`${this.tenantId}/${context}`);
  }

  private cursorBinding(binding: string): Uint8Array {
    return utf8.encode(`list-cursor/${this.tenantId}/${binding}`);
  }

  private sessionNonceText(content: Uint8Array): Uint8Array {
    const prefix = utf8.encode(`session-nonce/${this.tenantId}/`);
    const text = new Uint8Array(prefix.length + content.length);
    text.set(prefix);
    text.set(content, prefix.length);
    return text;
  }
}

async function sign(key: CryptoKey, value: string): Promise<string> {
  return toBase64Url(new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8.encode(value))));
}
