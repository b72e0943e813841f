// The statistics every benchmark reports its samples with (not a benchmark: bench/run.mjs runs only bench/*.mjs).

/** The value at quantile `q` (0 to 1) of the samples, nearest rank; NaN when there are none. */
export function quantile(samples, q) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

export function median(values) {
  return quantile(values, 0.5);
}

export function percentiles(samples) {
  return { p50: quantile(samples, 0.5), p95: quantile(samples, 0.95) };
}

export function mean(values) {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}
