import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { Partitions } from '../../../src/queues/partitions.ts';
import { backupKindOf, takeBackup } from '../../../src/runtime/redis-backup.ts';
import { isolatedRedis } from '../../support/redis.ts';

let env: Awaited<ReturnType<typeof isolatedRedis>>;
beforeEach(async () => {
  env = await isolatedRedis();
});
afterEach(() => env.cleanup());

describe('a backup taken while ingest creates patients', () => {
  it('holds each patient whole or not at all', async () => {
    const partitions = new Partitions(env.prefix, 1);
    const crosswalk = new Crosswalk({
      redis: env.redis,
      prefix: partitions,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    });
    // Enough keys that a SCAN takes several calls, so that patients created meanwhile can be
    // listed in part (one key before the cursor, the other after it).
    for (let batch = 0; batch < 30; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => crosswalk.resolve(`MRN-BEFORE-${batch}-${i}`)),
      );
    }

    // A writer creating new patients (lookup entry and sealed copy in one script) all along.
    let writing = true;
    let created = 0;
    const writer = (async () => {
      while (writing) {
        await crosswalk.resolve(`MRN-DURING-${created}`);
        created += 1;
      }
    })();
    let taken: Awaited<ReturnType<typeof takeBackup>>;
    try {
      taken = await takeBackup(env.redis, partitions);
    } finally {
      writing = false;
      await writer;
    }
    expect(created).toBeGreaterThan(0);

    const [partition] = taken.content.partitions;
    const entries = partition?.entries ?? [];
    const lookups = entries.filter(([key]) => backupKindOf(env.prefix, key) === 'xw');
    const sealed = entries.filter(([key]) => backupKindOf(env.prefix, key) === 'xwr');
    // Every patient created before the backup is in it; each one in it has both of its keys.
    expect(sealed.length).toBeGreaterThanOrEqual(3_000);
    expect(lookups.length).toBe(sealed.length);
    const inBackup = new Set(sealed.map(([key]) => key.slice(`${env.prefix}:xwr:`.length)));
    for (const [key] of lookups) {
      const psid = await env.redis.hget(key, 'psid');
      expect(inBackup.has(psid ?? '')).toBe(true);
    }
    expect(taken.keys[0]?.xw).toBe(lookups.length);
  });
});
