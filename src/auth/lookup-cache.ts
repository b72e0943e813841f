/**
 * Short-lived, per-isolate memory of credential lookups (API keys, proxy keys), for the hot paths
 * (docs/operations.md, "Credential lookups"): one D1 round trip costs more than the whole latency budget of a
 * proxied call, so a lookup may be reused for a short time (`CREDENTIAL_CACHE_TTL_MS`, default one
 * second) instead of being read on every request.
 *
 * How stale an entry can be is bounded twice:
 * - within an isolate, every write that changes what a credential grants (a proxy replaced or
 *   deleted, an application changed or deleted, a key revoked) calls `credentialsChanged()`, which
 *   empties every cache before the write is answered; a lookup already in flight at that moment is
 *   not stored;
 * - across isolates (production runs many), an entry is used for at most its time to live.
 *
 * Only lookups that grant something are kept: an unknown key is read again on every call, so a key
 * created a moment ago works at once and unknown keys cannot fill the memory.
 */
interface Entry<V> {
  value: V;
  expiresAt: number;
  weight: number;
}

interface Limits {
  /** Most entries kept; the oldest goes first. */
  entries: number;
  /** Most total weight kept (the caller's measure, e.g. characters held). */
  weight: number;
}

const caches = new Set<{ clear(): void }>();
/** Bumped by every credential change, so that a lookup that raced a change is not kept. */
let generation = 0;

/** Forget every cached lookup in this isolate: called by every write that changes a credential's grant. */
export function credentialsChanged(): void {
  generation++;
  for (const cache of caches) cache.clear();
}

export class LookupCache<V> {
  /**
   * Only settled values: a load under way is never shared with another request, which would then
   * resume in the loading request's context (docs/architecture.md, "Isolate-wide state").
   */
  private readonly entries = new Map<string, Entry<V>>();
  private totalWeight = 0;

  constructor(
    private readonly limits: Limits,
    private readonly weigh: (value: V) => number,
  ) {
    caches.add(this);
  }

  /**
   * The value under `key`: from memory while younger than `ttlMs`, else from `load`. A loaded value
   * is kept only when `keep` says it grants something and no credential changed meanwhile.
   * `ttlMs` 0 neither reads nor keeps: every call loads.
   */
  async lookup(key: string, ttlMs: number, load: () => Promise<V>, keep: (value: V) => boolean): Promise<V> {
    const cached = ttlMs > 0 ? this.entries.get(key) : undefined;
    if (cached && cached.expiresAt > Date.now()) return cached.value;
    if (cached) this.remove(key, cached);
    const startedAt = generation;
    const value = await load();
    if (ttlMs > 0 && startedAt === generation && keep(value)) this.store(key, value, ttlMs);
    return value;
  }

  clear(): void {
    this.entries.clear();
    this.totalWeight = 0;
  }

  private store(key: string, value: V, ttlMs: number): void {
    const weight = this.weigh(value);
    if (weight > this.limits.weight) return;
    const previous = this.entries.get(key);
    if (previous) this.remove(key, previous);
    while (this.entries.size >= this.limits.entries || this.totalWeight + weight > this.limits.weight) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, Entry<V>];
      this.remove(oldestKey, oldest);
    }
    this.entries.set(key, { value, expiresAt: Date.now() + ttlMs, weight });
    this.totalWeight += weight;
  }

  private remove(key: string, entry: Entry<V>): void {
    this.entries.delete(key);
    this.totalWeight -= entry.weight;
  }
}
