import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ClinicalUpdates } from '../../../src/ingest/clinical-updates.ts';
import { EventTracker } from '../../../src/ingest/fhir/event-tracker.ts';
import { FhirIngest } from '../../../src/ingest/fhir/fhir-ingest.ts';
import { FhirMetrics } from '../../../src/ingest/fhir/fhir-metrics.ts';
import {
  DemographicsWait,
  RECORD_WAITING_EXPIRED,
} from '../../../src/records/demographics-wait.ts';
import { readPipelineStatus } from '../../../src/runtime/pipeline-status.ts';
import { eventually } from '../../support/eventually.ts';
import { PipelineHarness, testConfig } from '../../support/pipeline-harness.ts';
import { condition } from '../fhir/support/notifications.ts';

/** The FHIR intake on the harness's stores, as the ingest app builds it (no FHIR server). */
function fhirIntake(harness: PipelineHarness): FhirIngest {
  return new FhirIngest({
    updates: new ClinicalUpdates({
      crosswalk: harness.crosswalk,
      records: harness.records,
      committer: harness.committer,
      rules: [],
      problemList: { enabled: true, categories: 'outpatient_default' },
    }),
    tracker: new EventTracker({ redis: harness.redis, prefix: harness.prefix }),
    client: undefined,
    patientIdentifierSystems: [],
    metrics: new FhirMetrics(new Registry()),
  });
}

const bundle = (...resources: Record<string, unknown>[]) => ({
  resourceType: 'Bundle',
  type: 'collection',
  entry: resources.map((resource) => ({ resource })),
});

const PATIENT = 'no-birth-date-1';

describe('a record without a birth date (Done-when 5)', () => {
  let harness: PipelineHarness;
  afterEach(() => harness.close());

  it('waits, and gets its result once an update brings the birth date, with no manual step', async () => {
    harness = await PipelineHarness.start();
    await harness.startWorker();
    const fhir = fhirIntake(harness);
    const waiting = new DemographicsWait({ redis: harness.redis, prefix: harness.partitions });

    // A Condition arrives before the Patient: END002 is opened, but no age can be sent.
    await fhir.applyBundle(bundle(condition('dw1', PATIENT)));
    await eventually(
      () => waiting.count(),
      (n) => n === 1,
    );
    const status = await readPipelineStatus({
      config: { ...harness.config, redis: { ...harness.config.redis, prefix: harness.prefix } },
      redis: harness.redis,
    });
    expect(status.waiting_for_demographics).toEqual({ count: 1 });
    expect(harness.outcomes).toEqual([]);
    expect(await harness.submissions()).toEqual([]);

    // The Patient comes (demographics only: the record keeps its Condition).
    await fhir.applyBundle(
      bundle({ resourceType: 'Patient', id: PATIENT, birthDate: '1958-04-09', gender: 'male' }),
    );
    await harness.untilOutcomes(1);
    expect(harness.outcomes.map((o) => [o.data.ccsrCategory, o.result.outcome])).toEqual([
      ['END002', 'completed'],
    ]);
    const [submission] = await harness.submissions();
    expect(submission?.body).toMatchObject({ ccsr_category: 'END002' });
    const delivered = await harness.delivered();
    expect(delivered.map((e) => [e.ccsr_category, e.status])).toEqual([['END002', 'completed']]);
    expect(await waiting.count()).toBe(0);
  });

  it('ends failed with ERR_RECORD_WAITING_EXPIRED when no birth date comes in time', async () => {
    harness = await PipelineHarness.start({
      config: testConfig({ queries: { demographics_wait_s: 1 } }),
    });
    await harness.startWorker();
    await fhirIntake(harness).applyBundle(bundle(condition('dw2', 'no-birth-date-2')));
    await harness.untilOutcomes(1);
    expect(harness.outcomes.map((o) => o.result.outcome)).toEqual(['failed']);
    const [event] = await harness.delivered();
    expect(event).toMatchObject({
      ccsr_category: 'END002',
      status: 'failed',
      error: { code: RECORD_WAITING_EXPIRED },
    });
    expect(await harness.submissions()).toEqual([]);
    expect(
      await new DemographicsWait({ redis: harness.redis, prefix: harness.partitions }).count(),
    ).toBe(0);
  });
});
