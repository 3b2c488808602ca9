import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acceptRecordUpdate } from '../../../src/ingest/accept-record-update.ts';
import { ClinicalUpdates } from '../../../src/ingest/clinical-updates.ts';
import { PatientLocator } from '../../../src/ingest/patient-locator.ts';
import { FaultyRedis } from '../../support/faulty-redis.ts';
import { ingestStack } from '../../support/ingest-stack.ts';
import { isolatedRedis } from '../../support/redis.ts';
import { sampleDiagnosis as diagnosis, samplePatient } from '../../support/sample-patient.ts';

/**
 * How many Redis commands (each one sequential round trip) an update costs, counted on the
 * connection ingest uses, with the scripts already loaded (a fresh Redis adds one NOSCRIPT round to
 * a script's first call).
 */
describe('Redis round trips per update (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let faulty: FaultyRedis;
  let stack: ReturnType<typeof ingestStack>;
  let locator: PatientLocator;

  beforeEach(async () => {
    env = await isolatedRedis();
    faulty = new FaultyRedis(env.redis);
    stack = ingestStack({ redis: faulty.client, prefix: env.prefix, debounceMs: 60_000 });
    locator = new PatientLocator({ crosswalk: stack.crosswalk, maxEntries: 100 });
  });
  afterEach(() => env.cleanup());

  const json = (patientId: string, age: number) =>
    acceptRecordUpdate(
      { locator, records: stack.records, committer: stack.committer, rules: [] },
      {
        patient_id: patientId,
        assembled_patient: { ...samplePatient, demographics: { age, gender: 'female' } },
        ccsr_categories: ['END002'],
      },
    );

  async function commandsOf(run: () => Promise<unknown>): Promise<number> {
    faulty.reset();
    await run();
    return faulty.count;
  }

  it('a known JSON patient: one (the commit script); a new one: two (lookup, commit)', async () => {
    await json('MRN-WARM', 40);
    await json('MRN-WARM', 41);
    expect(await commandsOf(() => json('MRN-NEW', 50))).toBe(2);
    expect(await commandsOf(() => json('MRN-NEW', 51))).toBe(1);
    // Another process's locator (an empty cache) looks it up first: two.
    locator = new PatientLocator({ crosswalk: stack.crosswalk, maxEntries: 100 });
    expect(await commandsOf(() => json('MRN-NEW', 52))).toBe(2);
    expect(await commandsOf(() => json('MRN-NEW', 53))).toBe(1);
  });

  it('a known HL7/FHIR patient: two for a change (stored state, commit), one for no change', async () => {
    const updates = new ClinicalUpdates({
      crosswalk: stack.crosswalk,
      records: stack.records,
      committer: stack.committer,
      rules: [],
      problemList: { enabled: true, categories: 'all' },
      locator,
    });
    const message = (code: string, eventId: string) =>
      updates.apply({
        localId: 'MRN-ORU',
        source: 'hl7v2',
        eventId,
        changes: [{ type: 'upsert', item: diagnosis(code) }],
        kinds: ['Condition'],
      });
    await message('E11.9', 'warm-1');
    await message('I10', 'warm-2');
    expect(await commandsOf(() => message('E78.5', 'e1'))).toBe(2);
    expect(await commandsOf(() => message('E78.5', 'e2'))).toBe(1);
  });
});
