import type { RedisClient } from '../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../src/identity/crosswalk.ts';
import { IdempotencyStore } from '../../src/ingest/idempotency-store.ts';
import { IngestMetrics } from '../../src/ingest/ingest-metrics.ts';
import { UpdateCommitter } from '../../src/ingest/update-committer.ts';
import { PresetStore } from '../../src/presets/preset-store.ts';
import {
  parseOutboxMember,
  queryOutboxKey,
  type DueQuery,
} from '../../src/queries/query-outbox.ts';
import { queryJobId } from '../../src/queries/query-job.ts';
import { QueryState } from '../../src/queries/query-state.ts';
import { RecordStore } from '../../src/records/record-store.ts';

/** A query in the due set, as ingest left it for the workers. */
export interface DueEntry extends DueQuery {
  jobId: string;
  dueAt: number;
}

/** The due set under `prefix`, soonest first. */
export async function dueQueries(redis: RedisClient, prefix: string): Promise<DueEntry[]> {
  const flat = await redis.zrange(queryOutboxKey(prefix), '0', '-1', 'WITHSCORES');
  const entries: DueEntry[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const due = parseOutboxMember(flat[i] as string);
    if (due === undefined) throw new Error('unreadable due-set member');
    entries.push({
      ...due,
      jobId: queryJobId(due.patientServiceId, due.ccsrCategory, due.seq),
      dueAt: Number(flat[i + 1]),
    });
  }
  return entries;
}

/**
 * The domain pieces an ingest app stands on, on the test's connection and prefix, with a fresh
 * crosswalk key, and the committer that applies each message in one script: for the tests of
 * those pieces themselves (the committer, ClinicalUpdates, round trips, the purge's erasers).
 * Tests of the ingest app build it with the composition root (src/app/compose-app.ts), as the
 * harnesses of test/integration/{ingest,hl7v2,fhir}/support do.
 */
export function ingestStack(options: {
  redis: RedisClient;
  prefix: string;
  debounceMs: number;
  /** @defaultValue 86400 */
  idempotencyTtlS?: number;
  /** @defaultValue 0 (records do not expire) */
  retentionSeconds?: number;
  /** Where `cw_queries_enqueued_total` is counted. @defaultValue a registry of its own */
  registry?: Registry;
}) {
  const { redis, prefix } = options;
  const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
  const records = new RecordStore({ redis, prefix, keys });
  const presets = new PresetStore({ redis, prefix });
  const metrics = new IngestMetrics(options.registry ?? new Registry());
  return {
    keys,
    crosswalk: new Crosswalk({ redis, prefix, keys }),
    records,
    presets,
    state: new QueryState({ redis, prefix }),
    committer: new UpdateCommitter({
      redis,
      prefix,
      records,
      presets,
      idempotency: new IdempotencyStore({
        redis,
        prefix,
        ttlSeconds: options.idempotencyTtlS ?? 86_400,
      }),
      debounceMs: options.debounceMs,
      retentionSeconds: options.retentionSeconds ?? 0,
      onQuery: (coalesced) => metrics.countQuery(coalesced),
      onUnchanged: () => metrics.countUnchanged(),
      onStored: () => metrics.countStored(),
    }),
    /** The due set, soonest first. */
    due: () => dueQueries(redis, prefix),
  };
}
