import type { Redis } from 'ioredis';

/** `value` with the glob characters of Redis `SCAN MATCH` escaped, for a literal match. */
export function globLiteral(value: string): string {
  return value.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** Every key matching `pattern`, walked with a SCAN cursor (never KEYS). */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
    cursor = next;
    for (const key of keys) found.add(key);
  } while (cursor !== '0');
  return [...found];
}
