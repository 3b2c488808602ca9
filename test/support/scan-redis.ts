import { scanKeys, type RedisClient } from '../../src/queues/redis-client.ts';

/** Where a needle was found: the key, and which part of it (`key` for its name). */
export interface RedisFinding {
  key: string;
  type: string;
  /** `key` (the name), or the field / member / entry that holds it. */
  where: string;
  needle: string;
}

/**
 * Every key under `prefix` (SCAN, in pages; every master of a cluster). A hash-tag prefix
 * (`{cwtest-…}`) covers its partitions' prefixes too (`{cwtest-….p1…}`).
 */
export async function redisKeys(redis: RedisClient, prefix: string): Promise<string[]> {
  const under = prefix.endsWith('}') ? prefix.slice(0, -1) : prefix;
  const pattern = `${under.replace(/[*?[\]\\]/g, '\\$&')}*`;
  return scanKeys(redis, pattern);
}

/** Every readable part of a key as [where, text] pairs, whatever its type. */
async function partsOf(redis: RedisClient, key: string, type: string): Promise<[string, string][]> {
  switch (type) {
    case 'string':
      return [['value', (await redis.getBuffer(key))?.toString('latin1') ?? '']];
    case 'hash': {
      const h = await redis.hgetallBuffer(key);
      return Object.entries(h).flatMap(([field, value]): [string, string][] => [
        [`field ${field}`, field],
        [`value of ${field}`, value.toString('latin1')],
      ]);
    }
    case 'list':
      return (await redis.lrangeBuffer(key, 0, -1)).map((v, i) => [
        `item ${i}`,
        v.toString('latin1'),
      ]);
    case 'set':
      return (await redis.smembersBuffer(key)).map((v) => ['member', v.toString('latin1')]);
    case 'zset':
      return (await redis.zrangeBuffer(key, '0', '-1')).map((v) => [
        'member',
        v.toString('latin1'),
      ]);
    case 'stream': {
      const entries = await redis.xrangeBuffer(key, '-', '+');
      return entries.flatMap(([id, fields]) =>
        fields.map((f, i): [string, string] => [
          `entry ${id.toString()} #${i}`,
          f.toString('latin1'),
        ]),
      );
    }
    default:
      throw new Error(`scan-redis: no reader for ${key} of type ${type}`);
  }
}

/**
 * Looks for each needle, in plain text, in every key name and every value under `prefix`
 * (strings, hashes — field names and values —, lists, sets, sorted sets, streams: BullMQ job data,
 * events and logs included). Returns where each was found: a test asserts `[]`. Values are read as
 * bytes, so a binary value (msgpack) is searched too.
 */
export async function scanRedisFor(
  redis: RedisClient,
  prefix: string,
  needles: readonly string[],
): Promise<RedisFinding[]> {
  const findings: RedisFinding[] = [];
  for (const key of await redisKeys(redis, prefix)) {
    const type = await redis.type(key);
    if (type === 'none') continue; // expired or removed since the scan
    for (const needle of needles) {
      if (key.includes(needle)) findings.push({ key, type, where: 'key', needle });
    }
    for (const [where, text] of await partsOf(redis, key, type)) {
      for (const needle of needles) {
        if (text.includes(needle)) findings.push({ key, type, where, needle });
      }
    }
  }
  return findings;
}
