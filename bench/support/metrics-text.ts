/** Reads a histogram (no labels besides `le`) out of Prometheus text exposition. */
export function parseHistogram(
  text: string,
  name: string,
): { buckets: [number, number][]; count: number; sum: number } | undefined {
  const buckets: [number, number][] = [];
  let count: number | undefined;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}_bucket{`)) {
      const le = /le="([^"]+)"/.exec(line)?.[1];
      const value = Number(line.slice(line.lastIndexOf(' ') + 1));
      if (le !== undefined) buckets.push([le === '+Inf' ? Infinity : Number(le), value]);
    } else if (line.startsWith(`${name}_count`)) {
      count = Number(line.slice(line.lastIndexOf(' ') + 1));
    } else if (line.startsWith(`${name}_sum`)) {
      sum = Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return count === undefined ? undefined : { buckets, count, sum };
}

/** The sum of every sample of a counter or gauge (all label sets). */
export function metricTotal(text: string, name: string): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
      total = (total ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}
