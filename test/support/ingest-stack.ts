import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../src/identity/crosswalk.ts';
import { PresetStore } from '../../src/presets/preset-store.ts';
import { QueryScheduler } from '../../src/queries/query-scheduler.ts';
import { QueryState } from '../../src/queries/query-state.ts';
import { CONCORDANCE_QUERIES } from '../../src/queues/queue-names.ts';
import { RecordStore } from '../../src/records/record-store.ts';

/**
 * The domain pieces an ingest app stands on, on the test's connections and prefix, with a fresh
 * crosswalk key. `reachable: false` skips waiting for the queue (a test of a Redis that is down).
 */
export async function ingestStack(options: {
  redis: Redis;
  queueConnection: Redis;
  prefix: string;
  debounceMs: number;
  reachable: boolean;
}) {
  const { redis, prefix } = options;
  const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
  const queue = new Queue(CONCORDANCE_QUERIES, { connection: options.queueConnection, prefix });
  queue.on('error', () => undefined);
  if (options.reachable) await queue.waitUntilReady();
  return {
    keys,
    crosswalk: new Crosswalk({ redis, prefix, keys }),
    records: new RecordStore({ redis, prefix, keys }),
    presets: new PresetStore({ redis, prefix }),
    queue,
    scheduler: new QueryScheduler({
      state: new QueryState({ redis, prefix }),
      queue,
      debounceMs: options.debounceMs,
    }),
  };
}
