import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { PresetStore } from '../../../src/presets/preset-store.ts';
import { Partitions } from '../../../src/queues/partitions.ts';
import type { RedisClient } from '../../../src/queues/redis-client.ts';
import { workerConnection } from '../../../src/queues/redis-connections.ts';
import { redisPersistence } from '../../../src/queues/redis-persistence.ts';
import { RecordStore } from '../../../src/records/record-store.ts';
import { restoreBackup, takeBackup } from '../../../src/runtime/redis-backup.ts';
import { clusterForTest, type TestCluster } from '../../support/redis-cluster.ts';
import { deleteKeysUnder } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';
import { NO_PERSISTENCE, startSpareRedis, type SpareRedis } from './support/spare-redis.ts';

/** At least this many patients, and more until every partition holds two (service ids are random). */
const MIN_PATIENTS = 12;

describe('backup of a partitioned pipeline on a Redis Cluster', () => {
  let cluster: TestCluster;
  let redis: RedisClient;
  let spare: SpareRedis;
  let target: Redis;
  const prefix = `{cwtest-${randomUUID()}}`;
  const partitions = new Partitions(prefix, 3);
  const keys = deriveCrosswalkKeys(generateCrosswalkSecret());

  beforeAll(async () => {
    cluster = await clusterForTest();
    redis = workerConnection(cluster.endpoint, 'backup-test');
    spare = await startSpareRedis(NO_PERSISTENCE);
    target = new Redis(spare.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    if (redis !== undefined) {
      await deleteKeysUnder(redis, prefix.slice(0, -1));
      await redis.quit();
    }
    target?.disconnect();
    await spare?.stop();
    await cluster?.stop();
  });

  it('asks every master whether it keeps its data on disk', async () => {
    const report = await redisPersistence(redis);
    expect(report.nodes.map((n) => n.node).sort()).toEqual([...cluster.nodes].sort());
    // The test cluster's servers keep nothing on disk.
    expect(report.verdict).toBe('none');
  });

  it('reads each partition on its master in one transaction and restores every patient', async () => {
    const stores = (on: RedisClient) => ({
      crosswalk: new Crosswalk({ redis: on, prefix: partitions, keys }),
      records: new RecordStore({ redis: on, prefix: partitions, keys }),
      presets: new PresetStore({ redis: on, prefix: partitions }),
    });
    const source = stores(redis);
    const psids = new Map<string, string>();
    const perPartition = new Map<number, number>();
    // The patients are spread over the three partitions (and so over the masters): a patient's
    // partition follows from its random service id, so patients are added until each partition
    // holds two (12 alone leave one partition empty about once in 40 runs).
    for (
      let i = 0;
      i < 200 &&
      (psids.size < MIN_PATIENTS || [0, 1, 2].some((p) => (perPartition.get(p) ?? 0) < 2));
      i++
    ) {
      const localId = `MRN-CLUSTER-BACKUP-${i}`;
      const { patientServiceId } = await source.crosswalk.resolve(localId);
      psids.set(localId, patientServiceId);
      const partition = partitions.indexOf(patientServiceId);
      perPartition.set(partition, (perPartition.get(partition) ?? 0) + 1);
      await source.records.put(patientServiceId, samplePatient);
      await source.presets.put(patientServiceId, 'END002', 'registered');
    }
    expect([0, 1, 2].map((p) => (perPartition.get(p) ?? 0) >= 2)).toEqual([true, true, true]);

    const taken = await takeBackup(redis, partitions);
    expect(taken.leftOut).toBe(0);
    expect(taken.content.partitions.map((p) => p.prefix)).toEqual([...partitions.prefixes]);
    const total = taken.keys.reduce((n, k) => n + k.xw + k.xwr + k.rec + k.presets, 0);
    expect(total).toBe(psids.size * 4);

    const header = {
      format: 'concordance-worker redis backup' as const,
      version: 1 as const,
      created_at: new Date().toISOString(),
      prefix,
      partitions: 3,
      keys: taken.keys,
      left_out: 0,
      cipher: 'AES-256-GCM' as const,
      kdf: 'HKDF-SHA256(CROSSWALK_KEY, "concordance-worker backup v1")' as const,
      key_id: '0123456789abcdef',
    };
    const report = await restoreBackup(target, partitions, header, taken.content);
    expect(report).toEqual({ restored: psids.size * 4, expired: 0 });

    const restored = stores(target);
    for (const [localId, psid] of psids) {
      expect(await restored.crosswalk.find(localId)).toBe(psid);
      expect((await restored.records.get(psid))?.record).toEqual(samplePatient);
      expect((await restored.presets.list(psid)).map((p) => p.ccsr_category)).toEqual(['END002']);
    }
  });
});
