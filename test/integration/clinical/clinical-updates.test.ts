import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Crosswalk } from '../../../src/identity/crosswalk.ts';
import { ClinicalUpdates } from '../../../src/ingest/clinical-updates.ts';
import type { PresetStore } from '../../../src/presets/preset-store.ts';
import type { ReportedItem } from '../../../src/records/clinical-change.ts';
import { CODE_SYSTEMS } from '../../../src/records/clinical-record.ts';
import type { RecordStore } from '../../../src/records/record-store.ts';
import { dueQueries, ingestStack } from '../../support/ingest-stack.ts';
import { isolatedRedis } from '../../support/redis.ts';
import { sampleDiagnosis } from '../../support/sample-patient.ts';

const diagnosis = sampleDiagnosis;

describe('ClinicalUpdates (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let presets: PresetStore;
  let records: RecordStore;
  let crosswalk: Crosswalk;
  let updates: ClinicalUpdates;

  beforeEach(async () => {
    env = await isolatedRedis();
    const { redis, prefix } = env;
    const stack = ingestStack({ redis, prefix, debounceMs: 60_000 });
    ({ presets, records, crosswalk } = stack);
    updates = new ClinicalUpdates({
      crosswalk,
      records,
      committer: stack.committer,
      rules: [{ ccsr_category: 'CIR007', when_changes: ['Observation'] }],
      problemList: { enabled: true, categories: 'outpatient_default' },
    });
  });
  afterEach(() => env.cleanup());

  /** The categories of the queries opened so far (the due set ingest leaves for the workers). */
  const jobCategories = async () =>
    (await dueQueries(env.redis, env.prefix)).map((due) => due.ccsrCategory).sort();

  it('turns an active E11.9 diagnosis of a new patient into an END002 preset and query', async () => {
    const result = await updates.apply({
      localId: 'MRN-PL-1',
      source: 'hl7v2',
      eventId: 'hl7v2:app:1',
      changes: [{ type: 'upsert', item: diagnosis('E11.9') }],
      kinds: ['Condition'],
    });
    expect(result).toMatchObject({ version: 1, changed: true });
    expect(await presets.list(result.patientServiceId)).toEqual([
      expect.objectContaining({ ccsr_category: 'END002', source: 'problem_list' }),
    ]);
    expect(await jobCategories()).toEqual(['END002']);
    const stored = await records.get(result.patientServiceId);
    expect(stored?.clinical?.items['hl7:dg1:icd10cm:E11.9']?.version).toBe(1);
  });

  it('opens no query for a message that changes nothing, unless a preset was added since', async () => {
    const message = {
      localId: 'MRN-PL-SAME',
      source: 'hl7v2' as const,
      eventId: 'e1',
      changes: [{ type: 'upsert' as const, item: diagnosis('E11.9') }],
      kinds: ['Condition'],
    };
    const first = await updates.apply(message);
    const due = async () => (await dueQueries(env.redis, env.prefix)).length;
    expect(await due()).toBe(1);
    // The same message again (a resend): no write, no query.
    expect(await updates.apply({ ...message, eventId: 'e2' })).toEqual({
      patientServiceId: first.patientServiceId,
      version: first.version,
      changed: false,
    });
    expect(await due()).toBe(1);
    expect(
      (await env.redis.hgetall(`${env.prefix}:qs:${first.patientServiceId}:END002`)).p_count,
    ).toBe('1');
    // A preset registered since: the same message opens that query (and joins the open one).
    await presets.put(first.patientServiceId, 'CIR007', 'registered');
    await updates.apply({ ...message, eventId: 'e3' });
    expect(await jobCategories()).toEqual(['CIR007', 'END002']);
  });

  it('removes the presets a resolved or deleted problem created, never registered ones', async () => {
    const first = await updates.apply({
      localId: 'MRN-PL-2',
      source: 'hl7v2',
      eventId: 'e1',
      changes: [
        { type: 'upsert', item: diagnosis('E11.9') },
        { type: 'upsert', item: diagnosis('I10') },
      ],
      kinds: ['Condition'],
    });
    const psid = first.patientServiceId;
    await presets.put(psid, 'MBD002', 'registered');
    expect((await presets.list(psid)).map((p) => p.ccsr_category).sort()).toEqual([
      'CIR007',
      'END002',
      'MBD002',
    ]);

    await updates.apply({
      localId: 'MRN-PL-2',
      source: 'hl7v2',
      eventId: 'e2',
      changes: [{ type: 'upsert', item: diagnosis('E11.9', 'resolved') }],
      kinds: ['Condition'],
    });
    expect((await presets.list(psid)).map((p) => p.ccsr_category).sort()).toEqual([
      'CIR007',
      'MBD002',
    ]);

    await updates.apply({
      localId: 'MRN-PL-2',
      source: 'hl7v2',
      eventId: 'e3',
      changes: [{ type: 'remove', key: 'hl7:dg1:icd10cm:I10' }],
      kinds: ['Condition'],
    });
    expect(await presets.list(psid)).toEqual([
      expect.objectContaining({ ccsr_category: 'MBD002', source: 'registered' }),
    ]);
  });

  it('schedules nothing for a message that changes nothing, and applies rules by kind', async () => {
    const change = { type: 'upsert' as const, item: diagnosis('E11.9') };
    await updates.apply({
      localId: 'MRN-PL-3',
      source: 'hl7v2',
      eventId: 'e1',
      changes: [change],
      kinds: ['Condition'],
    });
    const again = await updates.apply({
      localId: 'MRN-PL-3',
      source: 'hl7v2',
      eventId: 'e1',
      changes: [change],
      kinds: ['Condition'],
    });
    expect(again).toMatchObject({ version: 1, changed: false });
    expect(await jobCategories()).toEqual(['END002']);

    const lab: ReportedItem = {
      key: 'hl7:obx:4548-4',
      kind: 'observation',
      codings: [{ system: CODE_SYSTEMS.loinc, code: '4548-4' }],
      value: 8.2,
      unit: '%',
      interpretation: 'H',
      source: 'hl7v2',
    };
    await updates.apply({
      localId: 'MRN-PL-3',
      source: 'hl7v2',
      eventId: 'e2',
      changes: [{ type: 'upsert', item: lab }],
      kinds: ['Observation'],
    });
    expect(await jobCategories()).toEqual(['CIR007', 'END002']);
  });

  it('merges the prior patient into the surviving one: record items and presets', async () => {
    const prior = await updates.apply({
      localId: 'MRN-PRIOR',
      source: 'hl7v2',
      eventId: 'e1',
      changes: [
        { type: 'upsert', item: diagnosis('E11.9') },
        { type: 'patient', facets: { names: ['PRIOR^NAME'] } },
      ],
      kinds: ['Condition'],
    });
    await presets.put(prior.patientServiceId, 'MBD002', 'registered');
    const { patientServiceId } = await updates.merge({
      survivingLocalId: 'MRN-SURVIVOR',
      priorLocalId: 'MRN-PRIOR',
      eventId: 'a40',
    });
    const survivor = await records.get(patientServiceId);
    expect(Object.keys(survivor?.clinical?.items ?? {})).toEqual(['hl7:dg1:icd10cm:E11.9']);
    expect(survivor?.clinical?.patient.names).toEqual(['PRIOR^NAME']);
    expect(
      (await presets.list(patientServiceId)).map((p) => `${p.ccsr_category}:${p.source}`).sort(),
    ).toEqual(['END002:problem_list', 'MBD002:registered']);
    expect(await presets.list(prior.patientServiceId)).toEqual([]);
    expect((await records.get(prior.patientServiceId))?.clinical).toBeUndefined();
    expect(await crosswalk.find('MRN-PRIOR')).toBe(prior.patientServiceId);
  });
});
