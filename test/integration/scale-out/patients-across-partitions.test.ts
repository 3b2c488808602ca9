import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
  type CrosswalkKeys,
} from '../../../src/identity/crosswalk-keys.ts';
import { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { rotateKeys } from '../../../src/identity/rotate-keys.ts';
import { ClinicalUpdates } from '../../../src/ingest/clinical-updates.ts';
import { PresetStore } from '../../../src/presets/preset-store.ts';
import { queryOutboxKey } from '../../../src/queries/query-outbox.ts';
import type { ReportedItem } from '../../../src/records/clinical-change.ts';
import { CODE_SYSTEMS } from '../../../src/records/clinical-record.ts';
import { RecordStore } from '../../../src/records/record-store.ts';
import { patientAdminFor } from '../../../src/app/patient-admin-for.ts';
import { PipelineHarness } from '../../support/pipeline-harness.ts';
import { clusterForTest, type TestCluster } from '../../support/redis-cluster.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';

const diagnosis = (code: string): ReportedItem => ({
  key: `hl7:dg1:icd10cm:${code}`,
  kind: 'condition',
  codings: [{ system: CODE_SYSTEMS.icd10cm, code }],
  status: 'active',
  problemList: false,
  source: 'hl7v2',
});

/** A local id (`MRN-<tag>-<n>`) whose lookup under `keys` falls in partition `partition`. */
function localIdIn(h: PipelineHarness, keys: CrosswalkKeys, tag: string, partition: number) {
  for (let i = 0; ; i++) {
    const localId = `MRN-${tag}-${i}`;
    if (h.partitions.indexOfLookup(keys.lookup(localId)) === partition) return localId;
  }
}

describe("a patient's keys across partitions (merges, purge, opt-out, key rotation)", () => {
  let cluster: TestCluster;
  let h: PipelineHarness;
  let keys: CrosswalkKeys;
  let presets: PresetStore;
  let updates: ClinicalUpdates;

  beforeAll(async () => {
    cluster = await clusterForTest();
  });
  afterAll(() => cluster.stop());
  afterEach(() => h.close());

  async function start() {
    h = await PipelineHarness.start({ endpoint: cluster.endpoint, partitions: 3 });
    keys = deriveCrosswalkKeys(h.secret);
    presets = new PresetStore({ redis: h.redis, prefix: h.partitions });
    updates = new ClinicalUpdates({
      crosswalk: h.crosswalk,
      records: h.records,
      committer: h.committer,
      rules: [],
      problemList: { enabled: true, categories: 'outpatient_default' },
    });
  }

  const apply = (localId: string, code: string, eventId: string) =>
    updates.apply({
      localId,
      source: 'hl7v2',
      eventId,
      changes: [{ type: 'upsert', item: diagnosis(code) }],
      kinds: ['Condition'],
    });

  it('merges a prior patient of another partition: two scripts, and a prior that changed in between is merged again, never lost', async () => {
    await start();
    const priorLocal = localIdIn(h, keys, 'PRIOR', 1);
    const survivorLocal = localIdIn(h, keys, 'SURVIVOR', 2);
    const prior = await apply(priorLocal, 'E11.9', 'e-prior');
    await presets.put(prior.patientServiceId, 'MBD002', 'registered');
    const survivor = await apply(survivorLocal, 'I10', 'e-survivor');
    expect(h.partitions.indexOf(prior.patientServiceId)).toBe(1);
    expect(h.partitions.indexOf(survivor.patientServiceId)).toBe(2);

    // The prior patient changed after the merge read it (an expected version that is no more):
    // the survivor's part is done, the prior's refused, and nothing of the prior is lost.
    const refused = await h.committer.commit({
      patientServiceId: survivor.patientServiceId,
      record: { kind: 'keep' },
      eventId: 'a40-stale',
      now: new Date(),
      extraCategories: [],
      merge: {
        priorPatientServiceId: prior.patientServiceId,
        priorExpectedVersion: prior.version - 1,
        retiredKey: h.crosswalk.retiredKeyOf(prior.patientServiceId),
      },
    });
    expect(refused).toEqual({ status: 'conflict' });
    expect((await h.records.get(prior.patientServiceId))?.clinical).toBeDefined();
    expect((await presets.list(prior.patientServiceId)).map((p) => p.ccsr_category)).toEqual([
      'END002',
      'MBD002',
    ]);
    expect(await h.crosswalk.findCurrent(priorLocal)).toBe(prior.patientServiceId);

    // The merge as ingest runs it (A40): re-read, the survivor's part again, then the prior's.
    const merged = await updates.merge({
      survivingLocalId: survivorLocal,
      priorLocalId: priorLocal,
      eventId: 'a40',
    });
    expect(merged.patientServiceId).toBe(survivor.patientServiceId);
    const record = await h.records.get(survivor.patientServiceId);
    expect(Object.keys(record?.clinical?.items ?? {}).sort()).toEqual([
      'hl7:dg1:icd10cm:E11.9',
      'hl7:dg1:icd10cm:I10',
    ]);
    expect(
      (await presets.list(survivor.patientServiceId))
        .map((p) => `${p.ccsr_category}:${p.source}`)
        .sort(),
    ).toEqual(['CIR007:problem_list', 'END002:problem_list', 'MBD002:registered']);
    // The prior is retired in its own partition: no record, no presets, its id leads on.
    expect(await presets.list(prior.patientServiceId)).toEqual([]);
    expect((await h.records.get(prior.patientServiceId))?.clinical).toBeUndefined();
    expect(h.crosswalk.retiredKeyOf(prior.patientServiceId)).toMatch(
      new RegExp(`^${h.partitions.prefixAt(1).replace(/[{}.]/g, '\\$&')}:xwm:`),
    );
    expect(await h.crosswalk.findCurrent(priorLocal)).toBe(survivor.patientServiceId);

    // A late message for the prior local id goes to the survivor, and opens its queries there.
    const late = await apply(priorLocal, 'J45.909', 'e-late');
    expect(late.patientServiceId).toBe(survivor.patientServiceId);
    const due = await h.redis.zrange(queryOutboxKey(h.partitions.prefixAt(2)), '0', '-1');
    expect(due.every((member) => member.startsWith(`${survivor.patientServiceId}|`))).toBe(true);
    expect(await h.redis.zcard(queryOutboxKey(h.partitions.prefixAt(1)))).toBe(
      // The prior's own query of its first update, not one of the late message.
      1,
    );
  });

  it('purges and opts out a patient in its partition: nothing of a purged patient remains anywhere', async () => {
    await start();
    const admin = patientAdminFor({
      config: h.config,
      redis: h.redis,
      keys,
      logger: h.logs.logger,
    });
    try {
      const local = localIdIn(h, keys, 'PURGE', 2);
      const { patientServiceId } = await apply(local, 'E11.9', 'e-purge');
      await presets.put(patientServiceId, 'MBD002', 'registered');
      const report = await admin.admin.purge(local, { actor: 'cli:tester' });
      expect(report.counts).toMatchObject({ record: 1, presets: 2, crosswalk: 1, query_jobs: 1 });
      expect(await h.crosswalk.find(local)).toBeUndefined();
      expect(await scanRedisFor(h.redis, h.prefix, [patientServiceId])).toEqual([]);

      const objector = localIdIn(h, keys, 'OPTOUT', 1);
      const optedOut = await admin.admin.optOut(objector, { actor: 'cli:tester' });
      expect(h.partitions.indexOf(optedOut.patient_service_id)).toBe(1);
      await apply(objector, 'E11.9', 'e-objector');
      // Stored, but no query opened in its partition.
      expect(await h.records.get(optedOut.patient_service_id)).toBeDefined();
      expect(await h.redis.zcard(queryOutboxKey(h.partitions.prefixAt(1)))).toBe(0);
    } finally {
      await admin.close();
    }
  });

  it('rotates CROSSWALK_KEY across partitions (lookup entries move partition), and every patient is still found, read and purged', async () => {
    await start();
    const nextKeys = deriveCrosswalkKeys(generateCrosswalkSecret());
    // Patients whose lookup entry lands in another partition under the new key.
    const moving: string[] = [];
    for (let i = 0; moving.length < 3; i++) {
      const localId = `MRN-ROTATE-${i}`;
      const before = h.partitions.indexOfLookup(keys.lookup(localId));
      if (h.partitions.indexOfLookup(nextKeys.lookup(localId)) !== before) moving.push(localId);
    }
    const psids = new Map<string, string>();
    for (const [i, localId] of moving.entries()) {
      psids.set(localId, (await apply(localId, 'E11.9', `e-rotate-${i}`)).patientServiceId);
    }
    const report = await rotateKeys({
      redis: h.redis,
      prefix: h.partitions,
      crosswalk: { from: keys, to: nextKeys },
    });
    expect(report.crosswalk).toEqual({ resealed: 3, already: 0, unreadable: 0 });
    expect(report.records).toMatchObject({ resealed: 3, unreadable: 0 });
    // A second run changes nothing.
    const again = await rotateKeys({
      redis: h.redis,
      prefix: h.partitions,
      crosswalk: { from: keys, to: nextKeys },
    });
    expect(again.crosswalk).toEqual({ resealed: 0, already: 3, unreadable: 0 });

    const crosswalk = new Crosswalk({ redis: h.redis, prefix: h.partitions, keys: nextKeys });
    const records = new RecordStore({ redis: h.redis, prefix: h.partitions, keys: nextKeys });
    for (const localId of moving) {
      const psid = psids.get(localId) ?? '';
      expect(await crosswalk.findCurrent(localId)).toBe(psid);
      expect(await crosswalk.localIdOf(psid)).toBe(localId);
      expect((await records.get(psid))?.clinical?.items).toHaveProperty(['hl7:dg1:icd10cm:E11.9']);
    }
    // The old lookup entries are gone: only the new ones name the patients.
    for (const localId of moving) {
      const old = `${h.partitions.prefixAt(h.partitions.indexOfLookup(keys.lookup(localId)))}:xw:${keys.lookup(localId)}`;
      expect(await h.redis.exists(old)).toBe(0);
    }

    // A purge of a patient whose lookup entry and records are in two partitions.
    const admin = patientAdminFor({
      config: h.config,
      redis: h.redis,
      keys: nextKeys,
      logger: h.logs.logger,
    });
    try {
      const [first] = moving;
      await admin.admin.purge(first ?? '', { actor: 'cli:tester' });
      expect(await crosswalk.find(first ?? '')).toBeUndefined();
      expect(await scanRedisFor(h.redis, h.prefix, [psids.get(first ?? '') ?? ''])).toEqual([]);
    } finally {
      await admin.close();
    }
  });
});
