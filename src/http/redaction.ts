/**
 * Values a request revealed (detokenized data and what its expressions made of it). A request's
 * errors and log lines may be read by someone the data was never revealed to (the partner calling
 * an open proxy, an operator reading logs), so every such value is written as [redacted] there.
 */

export const REDACTED = "[redacted]";

/**
 * Shorter values are left alone: a two-digit month would blank out every "12" of a message, and a
 * value that short tells nothing a guess would not.
 */
const MIN_REDACTED_LENGTH = 3;

/** How a request showed a token it detokenized for its caller. */
export interface ShownToken {
  transform: "reveal" | "mask";
  /** The token's cvc deadline when what was shown held its cvc; null otherwise. */
  cvcExpiresAt: number | null;
}

export class RevealedValues {
  /** The tokens the request detokenized for its caller, by id: a replay of its answer checks them again. */
  readonly tokens = new Map<string, ShownToken>();
  private readonly values = new Set<string>();
  /** The values longest first, so that a value inside a longer one never leaves part of it behind. */
  private ordered: string[] | null = null;

  /** Every string and number inside the value, as written and as JSON writes it inside a string. */
  add(value: unknown): void {
    if (typeof value === "string" || typeof value === "number") {
      const text = String(value);
      if (text.length < MIN_REDACTED_LENGTH) return;
      this.values.add(text);
      this.values.add(JSON.stringify(text).slice(1, -1));
      this.ordered = null;
    } else if (Array.isArray(value)) {
      for (const item of value) this.add(item);
    } else if (value !== null && typeof value === "object") {
      for (const item of Object.values(value)) this.add(item);
    }
  }

  redact(text: string): string {
    if (this.values.size === 0) return text;
    this.ordered ??= [...this.values].sort((a, b) => b.length - a.length);
    let redacted = text;
    for (const value of this.ordered) redacted = redacted.replaceAll(value, REDACTED);
    return redacted;
  }
}
