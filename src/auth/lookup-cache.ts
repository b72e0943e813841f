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
 *
 * Near the end of its time to live an entry is read again by the next request that uses it, while
 * the others go on using it until it expires (see `lookup`).
 */
interface Entry<V> {
  value: V;
  expiresAt: number;
  /** From then on, the next request to use the entry reads it again. */
  renewAt: number;
  /** A request is reading it again. */
  renewing: boolean;
  weight: number;
}

/** The share of its time to live after which an entry is read again. */
const RENEW_AFTER = 0.75;

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
   *
   * Past RENEW_AFTER of its time to live, the next request loads the entry again, in its own context,
   * while the others go on using it until it expires. Otherwise, under load, every request in flight
   * when it expires would miss it and make its own read (a read under way is never shared), a burst
   * of reads every time to live. A reading again that no longer grants drops the entry; one that
   * fails leaves it for the next request to read again. No entry is used longer than before.
   */
  async lookup(key: string, ttlMs: number, load: () => Promise<V>, keep: (value: V) => boolean): Promise<V> {
    const cached = ttlMs > 0 ? this.entries.get(key) : undefined;
    const now = Date.now();
    if (cached && cached.expiresAt > now) {
      if (cached.renewing || now < cached.renewAt) return cached.value;
      cached.renewing = true;
      try {
        return await this.load(key, ttlMs, load, keep, cached);
      } finally {
        cached.renewing = false;
      }
    }
    if (cached) this.remove(key, cached);
    return this.load(key, ttlMs, load, keep, null);
  }

  clear(): void {
    this.entries.clear();
    this.totalWeight = 0;
  }

  /** Loads the value and keeps it as `lookup` says; `renewed` is the entry it is read again for, if any. */
  private async load(
    key: string,
    ttlMs: number,
    load: () => Promise<V>,
    keep: (value: V) => boolean,
    renewed: Entry<V> | null,
  ): Promise<V> {
    const startedAt = generation;
    const value = await load();
    if (ttlMs > 0 && startedAt === generation) {
      if (keep(value)) this.store(key, value, ttlMs);
      else if (renewed && this.entries.get(key) === renewed) this.remove(key, renewed);
    }
    return value;
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
    const now = Date.now();
    this.entries.set(key, { value, expiresAt: now + ttlMs, renewAt: now + RENEW_AFTER * ttlMs, renewing: false, weight });
    this.totalWeight += weight;
  }

  private remove(key: string, entry: Entry<V>): void {
    this.entries.delete(key);
    this.totalWeight -= entry.weight;
  }
}
