import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { queryOutboxKey } from '../../../src/queries/query-outbox.ts';
import { SubmissionStore } from '../../../src/queries/submission-store.ts';
import { eventually } from '../../support/eventually.ts';
import { PipelineHarness, sampleRecord, testConfig } from '../../support/pipeline-harness.ts';

/** Every query ends with an event, whatever the service answers and whatever befalls its job. */
describe('every query ends with an event', () => {
  let harness: PipelineHarness;
  afterEach(() => harness.close());

  it.each([
    { status: 400, code: 'ERR_SERVICE_REQUEST' },
    { status: 404, code: 'ERR_SERVICE_NOT_FOUND' },
    { status: 413, code: 'ERR_SERVICE_REQUEST' },
    { status: 415, code: 'ERR_SERVICE_REQUEST' },
  ] as const)(
    'a submission answered $status ends failed with $code, sent once',
    async ({ status, code }) => {
      harness = await PipelineHarness.start({
        faults: { routes: { 'POST /v1/concordance': { error_rate: 1, error_status: status } } },
      });
      await harness.startWorker();
      await harness.update(`MRN-${status}`, ['END002'], sampleRecord('refused'), 'ev-1');
      await harness.untilOutcomes(1);

      const [event] = await harness.delivered();
      expect(event).toMatchObject({
        type: 'concordance.failed',
        status: 'failed',
        error: { code },
        remote_job_id: null,
      });
      expect((await harness.submissions()).map((s) => s.status)).toEqual([status]);
      expect(await harness.metrics.queriesFinished.get()).toMatchObject({
        values: [{ labels: { outcome: 'failed' }, value: 1 }],
      });
    },
  );

  it('a 2xx without a readable job id ends failed at once: never sent again (a job may exist)', async () => {
    harness = await PipelineHarness.start({
      faults: {
        routes: { 'POST /v1/concordance': { malformed_rate: 1, malformed_body: 'wrong_shape' } },
      },
    });
    await harness.startWorker();
    await harness.update('MRN-SHAPE', ['END002'], sampleRecord('shape'), 'ev-1');
    await harness.untilOutcomes(1);

    const [event] = await harness.delivered();
    expect(event).toMatchObject({ status: 'failed', error: { code: 'ERR_SERVICE_BAD_RESPONSE' } });
    expect(await harness.submissions()).toHaveLength(1);
  });

  it('a submission that got no answer in time is retried and counted as a possible duplicate', async () => {
    const config = testConfig();
    harness = await PipelineHarness.start({
      config: { ...config, service: { ...config.service, timeout_ms: 300 } },
      faults: {
        routes: { 'POST /v1/concordance': { added_latency_ms: 2_000, times: 1 } },
      },
    });
    await harness.startWorker();
    await harness.update('MRN-SLOW', ['END002'], sampleRecord('slow'), 'ev-1');
    await harness.untilOutcomes(1);

    const [event] = await harness.delivered();
    expect(event).toMatchObject({ status: 'completed' });
    expect(await harness.metrics.possibleDuplicates.get()).toMatchObject({
      values: [{ labels: { reason: 'timeout' }, value: 1 }],
    });
  });

  it('a query whose workers keep dying with it ends failed with ERR_QUERY_STALLED', async () => {
    const config = testConfig({ queries: { max_stalled_count: 1 } });
    harness = await PipelineHarness.start({ config });
    const { patientServiceId } = await harness.update(
      'MRN-STALL',
      ['END002'],
      sampleRecord('stall'),
      'ev-1',
    );
    // The patient's partition (the only one without partitions).
    const prefix = harness.partitions.prefixOf(patientServiceId);
    const store = new SubmissionStore(harness.redis, prefix);
    // Two workers claim the query's submission and die with it: nothing is ever written back.
    const query = { patientServiceId, ccsrCategory: 'END002', seq: 1 };
    for (let dead = 0; dead < 2; dead++) {
      expect(await store.claim(query, Date.now(), randomUUID())).toMatchObject({
        leases: dead + 1,
      });
    }
    await harness.startWorker();

    const [event] = await eventually(
      () => harness.delivered(),
      (events) => events.length === 1,
      { timeoutMs: 20_000 },
    );
    expect(event).toMatchObject({
      status: 'failed',
      error: { code: 'ERR_QUERY_STALLED' },
      ccsr_category: 'END002',
    });
    // Ended, and forgotten: nothing is left in the outbox.
    expect(await harness.redis.zcard(queryOutboxKey(prefix))).toBe(0);
    expect(await harness.submissions()).toHaveLength(0);
  });
});
