/** Summary statistics of a sample (milliseconds in, milliseconds out). */
export interface Summary {
  count: number;
  min: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** The q-quantile (0..1) of an ascending array, by linear interpolation between ranks. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const a = sorted[lower] ?? 0;
  const b = sorted[upper] ?? a;
  return a + (b - a) * (position - lower);
}

export function round(value: number | null, digits = 2): number | null {
  if (value === null || !Number.isFinite(value)) return null;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function summarize(values: readonly number[], digits = 2): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.length === 0 ? null : sorted.reduce((s, v) => s + v, 0) / sorted.length;
  return {
    count: sorted.length,
    min: round(sorted[0] ?? null, digits),
    p50: round(quantile(sorted, 0.5), digits),
    p90: round(quantile(sorted, 0.9), digits),
    p99: round(quantile(sorted, 0.99), digits),
    max: round(sorted.at(-1) ?? null, digits),
    mean: round(mean, digits),
  };
}

/**
 * Quantile of a Prometheus histogram from its cumulative buckets (`le` -> count), interpolated
 * linearly inside the bucket as `histogram_quantile` does; null when it has no observations.
 */
export function histogramQuantile(buckets: readonly [number, number][], q: number): number | null {
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let previousLe = 0;
  let previousCount = 0;
  for (const [le, count] of sorted) {
    if (count >= rank) {
      if (!Number.isFinite(le)) return previousLe;
      const inBucket = count - previousCount;
      return inBucket === 0
        ? le
        : previousLe + ((le - previousLe) * (rank - previousCount)) / inBucket;
    }
    previousLe = le;
    previousCount = count;
  }
  return previousLe;
}

export const MiB = 1024 * 1024;
