import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../../../src/delivery/dead-letter-store.ts';
import { deriveCrosswalkKeys } from '../../../src/identity/crosswalk-keys.ts';
import { PresetStore } from '../../../src/presets/preset-store.ts';
import { PatientConsent } from '../../../src/privacy/patient-consent.ts';
import { Partitions } from '../../../src/queues/partitions.ts';
import { repartition } from '../../../src/runtime/repartition.ts';
import { StartupError } from '../../../src/config/startup-error.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { eventually } from '../../support/eventually.ts';
import { PipelineHarness, sampleRecord } from '../../support/pipeline-harness.ts';
import { clusterForTest, type TestCluster } from '../../support/redis-cluster.ts';
import { redisKeys } from '../../support/scan-redis.ts';

const PATIENTS = Array.from({ length: 9 }, (_, i) => `MRN-REPART-${i}`);

describe('concordance-worker redis repartition (changing REDIS_PARTITIONS on an install with data)', () => {
  let cluster: TestCluster;
  const harnesses: PipelineHarness[] = [];
  beforeAll(async () => {
    cluster = await clusterForTest();
  });
  afterEach(async () => {
    // The joining harnesses first: the first one owns the keys and deletes them.
    for (const h of harnesses.splice(0).reverse()) await h.close();
  });
  afterAll(() => cluster.stop());

  it('moves a drained one-partition install to three partitions and back: every patient found, nothing lost, queries run', async () => {
    const one = await PipelineHarness.start({ endpoint: cluster.endpoint, partitions: 1 });
    harnesses.push(one);
    const worker = await one.startWorker();
    const psids = new Map<string, string>();
    for (const [i, localId] of PATIENTS.entries()) {
      const update = await one.update(localId, ['END002'], sampleRecord(`r-${i}`), `ev-${i}`);
      psids.set(localId, update.patientServiceId);
    }
    await one.untilOutcomes(PATIENTS.length);
    const [registered, objector, withFhir] = PATIENTS.map((id) => psids.get(id) ?? '');
    await new PresetStore({ redis: one.redis, prefix: one.partitions }).put(
      registered ?? '',
      'MBD002',
      'registered',
    );
    await new PatientConsent({ redis: one.redis, prefix: one.partitions }).optOut(objector ?? '');
    const opaque = await one.crosswalk.opaqueFhirId(withFhir ?? '', 'Condition/abc');
    const three = new Partitions(one.prefix, 3);
    // A dead letter of a patient whose partition will not be 0.
    const keys = deriveCrosswalkKeys(one.secret);
    const letterEvent = (await one.delivered()).find(
      (event) => three.indexOf(event.patient_service_id) !== 0,
    );
    if (letterEvent === undefined) throw new Error('no patient outside partition 0');
    const at = new Date().toISOString();
    await new DeadLetterStore({ redis: one.redis, prefix: one.prefix, keys }).add({
      event: letterEvent,
      channel: 'webhook',
      last_error: { code: 'ERR_WEBHOOK_GONE', status: 410, message: 'gone' },
      attempts: 1,
      first_attempt_at: at,
      last_attempt_at: at,
      dead_lettered_at: at,
    });

    // The keys under the prefix, but the queue's rate limiter: BullMQ's worker counts the jobs it
    // takes in a key that expires by itself within the limiter's second (see workers/).
    const lasting = async () =>
      (await redisKeys(one.redis, one.prefix)).filter((key) => !key.endsWith(':limiter')).sort();
    // Workers still connected: refused, nothing moved.
    const before = await lasting();
    await expect(
      repartition({ redis: one.redis, from: one.partitions, to: three }),
    ).rejects.toThrow(StartupError);
    await expect(
      repartition({ redis: one.redis, from: one.partitions, to: three }),
    ).rejects.toThrow(/worker\(s\) of .*concordance-queries are connected/);
    expect(await lasting()).toEqual(before);
    await worker.close();
    // The stopped worker's presence is gone with it; nothing else changed.
    const drained = await lasting();
    // The rate limiter's count is gone within its second: what follows is counted without it.
    await eventually(
      async () => (await redisKeys(one.redis, one.prefix)).filter((k) => k.endsWith(':limiter')),
      (limiters) => limiters.length === 0,
    );
    expect(before.filter((key) => !drained.includes(key))).toEqual([`${one.prefix}:qworkers`]);

    // A dry run counts and changes nothing; the run moves; a second run moves nothing.
    const dry = await repartition({
      redis: one.redis,
      from: one.partitions,
      to: three,
      dryRun: true,
    });
    expect(await lasting()).toEqual(drained);
    const report = await repartition({ redis: one.redis, from: one.partitions, to: three });
    expect(report).toEqual(dry);
    expect(report.moved.rec).toBeGreaterThan(0);
    expect(report.moved.xw).toBeGreaterThan(0);
    expect(report.kept).toBeGreaterThan(0);
    expect(report.dead_letters_moved).toBe(1);
    const lettersIn = (prefix: string) =>
      new DeadLetterStore({ redis: one.redis, prefix, keys }).list();
    expect(await lettersIn(one.prefix)).toEqual([]);
    expect(
      (await lettersIn(three.prefixOf(letterEvent.patient_service_id))).map((l) => l.event.id),
    ).toEqual([letterEvent.id]);
    // Run again (an operator unsure whether it finished): nothing left to move.
    expect(await repartition({ redis: one.redis, from: one.partitions, to: three })).toEqual({
      moved: {},
      kept: report.kept,
      dead_letters_moved: 0,
      deleted: 0,
    });

    // The same data with three partitions: every patient where its service id says.
    const joined = await PipelineHarness.start({
      endpoint: cluster.endpoint,
      partitions: 3,
      join: { prefix: one.prefix, secret: one.secret },
    });
    harnesses.push(joined);
    for (const [localId, psid] of psids) {
      expect(await joined.crosswalk.findCurrent(localId)).toBe(psid);
      expect(await joined.crosswalk.localIdOf(psid)).toBe(localId);
      expect((await joined.records.get(psid))?.record).toBeDefined();
      expect(await joined.redis.exists(`${three.prefixOf(psid)}:rec:${psid}`)).toBe(1);
    }
    expect(
      (await new PresetStore({ redis: joined.redis, prefix: three }).list(registered ?? '')).map(
        (p) => p.ccsr_category,
      ),
    ).toEqual(['MBD002']);
    expect(
      await new PatientConsent({ redis: joined.redis, prefix: three }).isOptedOut(objector ?? ''),
    ).toBe(true);
    expect(await joined.crosswalk.fhirIdOf(withFhir ?? '', opaque)).toBe('Condition/abc');

    // Their next updates join their query state (sequence 2) and run; the objector's opens none.
    await joined.startWorker();
    for (const [i, localId] of PATIENTS.entries()) {
      const update = await joined.update(localId, ['END002'], sampleRecord(`s-${i}`), `ev2-${i}`);
      expect(update.patientServiceId).toBe(psids.get(localId));
      // END002's second query; the registered MBD002 preset's first.
      expect(update.jobs.filter((job) => job.includes('-END002-'))).toEqual(
        localId === PATIENTS[1] ? [] : [expect.stringMatching(/-END002-2$/)],
      );
    }
    // Eight END002 queries (not the objector's) and the registered MBD002.
    await joined.untilOutcomes(PATIENTS.length);
    expect(joined.outcomes.every((o) => o.result.outcome === 'completed')).toBe(true);
    expect(joined.outcomes.map((o) => o.data.patientServiceId)).not.toContain(objector);
    await joined.close();
    harnesses.pop();

    // And back to one partition with the command, as an operator runs it.
    const back = new CliProcess(['redis', 'repartition', '--from', '3'], {
      REDIS_URL: cluster.endpoint.url,
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      REDIS_PREFIX: one.prefix,
      REDIS_PARTITIONS: '1',
    });
    expect(await back.exited).toBe(0);
    expect(back.stdout.join('\n')).toMatch(/keys moved: .*rec \d+/);
    for (const [localId, psid] of psids) {
      expect(await one.crosswalk.findCurrent(localId)).toBe(psid);
      expect((await one.records.get(psid))?.record).toBeDefined();
    }
    // Nothing is left under the prefixes of partitions 1 and 2.
    const left = await redisKeys(one.redis, one.prefix);
    expect(left.filter((key) => !key.startsWith(`${one.prefix}:`))).toEqual([]);
  });
});
