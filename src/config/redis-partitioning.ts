/**
 * What the configuration's Redis settings are checked against (`redis.partitions`, `redis.prefix`):
 * the partition limit and Redis Cluster's hash tags. Here, below the queues, so that the
 * configuration does not import `src/queues`; `src/queues/partitions.ts` builds on both.
 */

/** The most partitions a configuration may ask for (`redis.partitions`). */
export const MAX_PARTITIONS = 32;

/**
 * The hash tag Redis Cluster hashes a key by: the text between the first `{` and the first `}`
 * after it, when that text is not empty (else the whole key is hashed, and there is no tag).
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return key.slice(open + 1, close);
}
