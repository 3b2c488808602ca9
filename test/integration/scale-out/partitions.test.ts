import type { Cluster } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deriveCrosswalkKeys } from '../../../src/identity/crosswalk-keys.ts';
import { PipelineMetrics } from '../../../src/observability/pipeline-metrics.ts';
import { slotOf } from '../../../src/queues/partitions.ts';
import { readPipelineStatus } from '../../../src/runtime/pipeline-status.ts';
import { eventually } from '../../support/eventually.ts';
import { PipelineHarness, sampleRecord } from '../../support/pipeline-harness.ts';
import { clusterForTest, type TestCluster } from '../../support/redis-cluster.ts';
import { redisKeys } from '../../support/scan-redis.ts';

interface Body {
  assembled_patient: { nodes: { metadata?: { marker?: string } }[] };
}
const markerOf = (body: unknown) => (body as Body).assembled_patient.nodes[0]?.metadata?.marker;

/** Local ids whose patients fall in each partition, `perPartition` of each (by the lookup HMAC). */
function localIdsByPartition(h: PipelineHarness, tag: string, perPartition: number): string[][] {
  const keys = deriveCrosswalkKeys(h.secret);
  const found: string[][] = h.partitions.prefixes.map(() => []);
  for (let i = 0; found.some((ids) => ids.length < perPartition); i++) {
    const localId = `MRN-${tag}-${i}`;
    const ids = found[h.partitions.indexOfLookup(keys.lookup(localId))] as string[];
    if (ids.length < perPartition) ids.push(localId);
  }
  return found;
}

/** The `host:port` of the master that serves a key's slot. */
async function masterOf(redis: Cluster, key: string): Promise<string> {
  const slot = slotOf(key);
  const range = (await redis.cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to);
  const master = range?.[2];
  if (master === undefined) throw new Error(`no master serves slot ${slot}`);
  return `${master[0]}:${master[1]}`;
}

describe('partitions on a 3-node Redis Cluster (REDIS_PARTITIONS=3)', () => {
  let cluster: TestCluster;
  let harness: PipelineHarness;
  beforeAll(async () => {
    cluster = await clusterForTest();
  });
  afterEach(() => harness.close());
  afterAll(() => cluster.stop());

  it("spreads patients over the partitions, one per master; a patient's keys carry its partition's tag; every query runs once", async () => {
    harness = await PipelineHarness.start({ endpoint: cluster.endpoint, partitions: 3 });
    const h = harness;
    // The three partitions' slots are on three different masters: the load has three shards.
    const masters = await Promise.all(
      h.partitions.prefixes.map((p) => masterOf(h.redis as Cluster, `${p}:qdue`)),
    );
    expect(new Set(masters).size).toBe(3);
    await h.startWorker();
    const byPartition = localIdsByPartition(h, 'SPREAD', 3);
    const psids = new Map<string, number>();
    for (const [p, ids] of byPartition.entries()) {
      for (const [i, localId] of ids.entries()) {
        // No local id in the record: it would be refused as an identifier leak.
        const { patientServiceId } = await h.update(
          localId,
          ['END002'],
          sampleRecord(`spread-${p}-${i}`),
          `ev-${p}-${i}`,
        );
        // A new patient's service id is drawn in its local id's partition.
        expect(h.partitions.indexOf(patientServiceId)).toBe(p);
        psids.set(patientServiceId, p);
      }
    }
    await h.untilOutcomes(9);

    for (const [psid, p] of psids) {
      const prefix = h.partitions.prefixAt(p);
      expect(await h.redis.exists(`${prefix}:rec:${psid}`)).toBe(1);
      expect(await h.redis.exists(`${prefix}:xwr:${psid}`)).toBe(1);
    }
    // Each partition's worker ran its own patients' queries, three each.
    for (const p of [0, 1, 2]) {
      const done = h.outcomes.filter((o) => o.partition === p);
      expect(done.map((o) => h.partitions.indexOf(o.data.patientServiceId))).toEqual([p, p, p]);
    }
    expect(await h.submissions()).toHaveLength(9);
    const events = await h.delivered();
    expect(events.map((e) => e.patient_id).sort()).toEqual(byPartition.flat().sort());
    expect(events.every((e) => e.status === 'completed')).toBe(true);
  });

  it('keeps each patient in order in every partition: a burst is one submission of the last record, an update while polling one follow-up', async () => {
    harness = await PipelineHarness.start({
      endpoint: cluster.endpoint,
      partitions: 3,
      latencyMs: [800, 800],
    });
    const h = harness;
    const patients = localIdsByPartition(h, 'ORDER', 1).map((ids) => ids[0] as string);
    const psidOf = new Map<string, string>();
    // Markers name the patient by its place in `patients` (a local id would be an identifier).
    const tagOf = (localId: string) => `o${patients.indexOf(localId)}`;
    for (const localId of patients) {
      const jobIds = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const update = await h.update(
          localId,
          ['END002'],
          sampleRecord(`${tagOf(localId)}-burst-${i}`),
          `${tagOf(localId)}-ev-${i}`,
        );
        psidOf.set(localId, update.patientServiceId);
        for (const id of update.jobs) jobIds.add(id);
      }
      // 20 updates of one patient, one query.
      expect(jobIds.size).toBe(1);
    }
    await h.startWorker();
    await h.untilOutcomes(3);
    const bursts = await h.submissions();
    expect(bursts.map((s) => markerOf(s.body)).sort()).toEqual(
      patients.map((id) => `${tagOf(id)}-burst-19`).sort(),
    );

    // While each patient's next query polls, two more updates: one follow-up, the newest record.
    for (const localId of patients) {
      const tag = tagOf(localId);
      await h.update(localId, ['END002'], sampleRecord(`${tag}-next-1`), `${tag}-n1`);
    }
    await eventually(
      () => h.submissions(),
      (all) => all.length === 6,
    );
    for (const localId of patients) {
      const tag = tagOf(localId);
      await h.update(localId, ['END002'], sampleRecord(`${tag}-next-2`), `${tag}-n2`);
      await h.update(localId, ['END002'], sampleRecord(`${tag}-next-3`), `${tag}-n3`);
    }
    await h.untilOutcomes(9);

    const submissions = await h.submissions();
    for (const localId of patients) {
      const tag = tagOf(localId);
      expect(
        submissions.map((s) => markerOf(s.body)).filter((marker) => marker?.startsWith(`${tag}-`)),
      ).toEqual([`${tag}-burst-19`, `${tag}-next-1`, `${tag}-next-3`]);
      const outcomes = h.outcomes
        .filter((o) => o.data.patientServiceId === psidOf.get(localId))
        .map((o) => o.result.outcome)
        .sort();
      expect(outcomes).toEqual(['completed', 'completed', 'superseded']);
      const events = (await h.delivered()).filter((e) => e.patient_id === localId);
      expect(events.map((e) => e.record_version)).toEqual([20, 23]);
      expect(events.at(-1)?.triggered_by.event_ids).toEqual([`${tag}-n2`, `${tag}-n3`]);
    }
  });

  it('shows each partition in status and in cw_queue_jobs', async () => {
    harness = await PipelineHarness.start({ endpoint: cluster.endpoint, partitions: 3 });
    const h = harness;
    const status = await readPipelineStatus({ config: h.config, redis: h.redis });
    expect(status.partitions).toBe(3);
    expect(
      status.queues.filter((q) => q.name === 'concordance-queries').map((q) => q.partition),
    ).toEqual([0, 1, 2]);
    // The outbound queue is one, the hospital's consumers read it as before.
    expect(status.queues.filter((q) => q.name === 'concordance-results')).toEqual([
      expect.objectContaining({ partition: 0 }),
    ]);

    const registry = new Registry();
    const metrics = new PipelineMetrics(registry);
    metrics.watchQueues(...h.queues.map((queue, partition) => ({ queue, partition })));
    const metric = registry.getSingleMetric('cw_queue_jobs');
    if (metric === undefined) throw new Error('cw_queue_jobs is not registered');
    const { values } = await metric.get();
    const waiting = values.filter((v) => v.labels.state === 'waiting');
    expect(waiting.map((v) => `${v.labels.queue}/${v.labels.partition}`).sort()).toEqual([
      'concordance-queries/0',
      'concordance-queries/1',
      'concordance-queries/2',
    ]);
  });

  it('with one partition names every key as before partitions existed (an install upgrades with nothing to move)', async () => {
    harness = await PipelineHarness.start({ endpoint: cluster.endpoint, partitions: 1 });
    const h = harness;
    expect(h.partitions.prefixes).toEqual([h.prefix]);
    await h.startWorker();
    const { patientServiceId: psid } = await h.update(
      'MRN-UPGRADE',
      ['END002'],
      sampleRecord('upgrade'),
      'ev-upgrade',
    );
    await h.untilOutcomes(1);
    const keys = await redisKeys(h.redis, h.prefix);
    // Only the configured prefix, and the key names of the release before partitions.
    expect(keys.every((key) => key.startsWith(`${h.prefix}:`))).toBe(true);
    for (const expected of [
      `${h.prefix}:rec:${psid}`,
      `${h.prefix}:xwr:${psid}`,
      `${h.prefix}:qs:${psid}:END002`,
      `${h.prefix}:concordance-queries:meta`,
      `${h.prefix}:concordance-results:meta`,
    ]) {
      expect(keys).toContain(expected);
    }
    expect(keys.filter((key) => key.startsWith(`${h.prefix}:xw:`))).toHaveLength(1);
  });
});
