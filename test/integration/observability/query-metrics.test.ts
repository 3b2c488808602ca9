import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness, sampleRecord, testConfig } from '../../support/pipeline-harness.ts';
import { parseExposition, total, type Sample } from './support/exposition.ts';

const SUBMIT = { endpoint: 'POST /v1/concordance' };
const GET = { endpoint: 'GET /v1/concordance/{job_id}' };

/**
 * What the query worker counts for each way a query ends: the real worker against the local
 * Clinical Graph Service (with faults), its metrics read from the registry's exposition.
 */
describe('query worker metrics by outcome', () => {
  let harness: PipelineHarness;
  afterEach(() => harness.close());

  const samples = async (): Promise<Sample[]> => parseExposition(await harness.registry.metrics());

  const finished = (s: Sample[]) =>
    Object.fromEntries(
      s
        .filter((x) => x.name === 'cw_queries_finished_total')
        .map((x) => [x.labels.outcome, x.value]),
    );

  it('counts a lost remote job: two polls found it lost, one resubmission, finished lost', async () => {
    harness = await PipelineHarness.start({ faults: { job_loss_rate: 1 } });
    await harness.startWorker();
    await harness.update('MRN-LOST', ['END002'], sampleRecord('lost'), 'ev-1');
    await harness.untilOutcomes(1);
    const s = await samples();
    expect(finished(s)).toEqual({ lost: 1 });
    expect(total(s, 'cw_query_resubmissions_total')).toBe(1);
    expect(total(s, 'cw_polls_total', { state: 'lost' })).toBe(2);
    expect(total(s, 'cw_service_requests_total', { ...SUBMIT, status: '202' })).toBe(2);
    expect(total(s, 'cw_service_requests_total', GET)).toBe(total(s, 'cw_polls_total'));
  });

  it('counts a remote failure as a failure poll and a failed query', async () => {
    harness = await PipelineHarness.start({ faults: { job_failure_rate: 1 } });
    await harness.startWorker();
    await harness.update('MRN-FAIL', ['END002'], sampleRecord('fail'), 'ev-1');
    await harness.untilOutcomes(1);
    const s = await samples();
    expect(finished(s)).toEqual({ failed: 1 });
    expect(total(s, 'cw_polls_total', { state: 'failure' })).toBe(1);
    expect(total(s, 'cw_query_resubmissions_total')).toBe(0);
  });

  it('counts a query the service refuses (422) as rejected, and the 422 by endpoint', async () => {
    harness = await PipelineHarness.start();
    await harness.startWorker();
    await harness.update('MRN-422', ['XXX000'], sampleRecord('bad'), 'ev-1');
    await harness.untilOutcomes(1);
    const s = await samples();
    expect(finished(s)).toEqual({ rejected: 1 });
    expect(total(s, 'cw_service_requests_total', { ...SUBMIT, status: '422' })).toBe(1);
    expect(total(s, 'cw_polls_total')).toBe(0);
  });

  it('counts a query whose remote job never ends as timed_out', async () => {
    const config = testConfig();
    harness = await PipelineHarness.start({
      config: {
        ...config,
        queries: { ...config.queries, poll: { ...config.queries.poll, deadline_ms: 400 } },
      },
      faults: { never_finish_rate: 1 },
    });
    await harness.startWorker();
    await harness.update('MRN-SLOW', ['END002'], sampleRecord('slow'), 'ev-1');
    await harness.untilOutcomes(1);
    const s = await samples();
    expect(finished(s)).toEqual({ timed_out: 1 });
    expect(total(s, 'cw_polls_total', { state: 'pending' })).toBeGreaterThan(0);
    expect(total(s, 'cw_poll_lateness_seconds_count')).toBe(total(s, 'cw_polls_total'));
  });

  it('counts an older query stopped by a newer one as superseded, and the newer as completed', async () => {
    harness = await PipelineHarness.start({ latencyMs: [1_500, 1_500] });
    await harness.startWorker();
    await harness.update('MRN-FOLLOW', ['CIR007'], sampleRecord('first'), 'ev-1');
    await harness.logs.waitFor((e) => e.msg === 'query submitted');
    await harness.update('MRN-FOLLOW', ['CIR007'], sampleRecord('second'), 'ev-2');
    await harness.untilOutcomes(2);
    expect(finished(await samples())).toEqual({ superseded: 1, completed: 1 });
  });
});
