import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import { AuthPause } from '../../../src/queues/auth-pause.ts';
import { startHeaderStrippingProxy } from '../../support/header-stripping-proxy.ts';
import {
  API_KEY,
  PipelineHarness,
  sampleRecord,
  testConfig,
} from '../../support/pipeline-harness.ts';

interface Body {
  ccsr_category: string;
  assembled_patient: { nodes: { metadata?: { marker?: string } }[] };
}

const markerOf = (body: unknown) => (body as Body).assembled_patient.nodes[0]?.metadata?.marker;

describe('the query pipeline (real Redis, local Clinical Graph Service)', () => {
  let harness: PipelineHarness;
  afterEach(() => harness.close());

  it('coalesces a burst of 50 updates into one submission carrying the last record', async () => {
    harness = await PipelineHarness.start();
    const jobIds = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const { jobs } = await harness.update(
        'MRN-BURST',
        ['END002'],
        sampleRecord(`burst-${i}`),
        `ev-${i}`,
      );
      for (const id of jobs) jobIds.add(id);
    }
    expect(jobIds.size).toBe(1);
    await harness.startWorker();
    await harness.untilOutcomes(1);

    const submissions = await harness.submissions();
    expect(submissions).toHaveLength(1);
    expect(markerOf(submissions[0]?.body)).toBe('burst-49');
    const [event] = await harness.delivered();
    expect(event).toMatchObject({
      type: 'concordance.completed',
      status: 'completed',
      patient_id: 'MRN-BURST',
      ccsr_category: 'END002',
      record_version: 50,
    });
    expect(event?.triggered_by.count).toBe(50);
    expect(event?.triggered_by.event_ids.at(-1)).toBe('ev-49');
    expect(event?.concordance).toMatchObject({ simulated: true });
  });

  it('runs exactly one follow-up for an update during polling, and the last result is the newest record', async () => {
    harness = await PipelineHarness.start({ latencyMs: [1_500, 1_500] });
    await harness.startWorker();
    await harness.update('MRN-FOLLOW', ['CIR007'], sampleRecord('first'), 'ev-1');
    await harness.logs.waitFor((e) => e.msg === 'query submitted');
    const second = await harness.update('MRN-FOLLOW', ['CIR007'], sampleRecord('second'), 'ev-2');
    await harness.update('MRN-FOLLOW', ['CIR007'], sampleRecord('third'), 'ev-3');
    await harness.untilOutcomes(2);

    const submissions = await harness.submissions();
    expect(submissions.map((s) => markerOf(s.body))).toEqual(['first', 'third']);
    expect(harness.outcomes.map((o) => o.result.outcome).sort()).toEqual([
      'completed',
      'superseded',
    ]);
    const events = await harness.delivered();
    expect(events).toHaveLength(1);
    expect(events.at(-1)?.record_version).toBe(second.version + 1);
    expect(events.at(-1)?.triggered_by.event_ids).toEqual(['ev-2', 'ev-3']);
  });

  it('runs three presets of one patient as three independent queries', async () => {
    harness = await PipelineHarness.start();
    await harness.startWorker();
    const { jobs } = await harness.update(
      'MRN-THREE',
      ['END002', 'CIR007', 'RSP009'],
      sampleRecord('three'),
      'ev-1',
    );
    expect(new Set(jobs).size).toBe(3);
    await harness.untilOutcomes(3);
    const submissions = await harness.submissions();
    expect(submissions.map((s) => (s.body as Body).ccsr_category).sort()).toEqual([
      'CIR007',
      'END002',
      'RSP009',
    ]);
    const events = await harness.delivered();
    expect(events.map((e) => e.ccsr_category).sort()).toEqual(['CIR007', 'END002', 'RSP009']);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
  });

  it('submits a lost remote job once more, then fails it as lost', async () => {
    harness = await PipelineHarness.start({ faults: { job_loss_rate: 1 } });
    await harness.startWorker();
    await harness.update('MRN-LOST', ['END002'], sampleRecord('lost'), 'ev-1');
    await harness.untilOutcomes(1);
    expect(await harness.submissions()).toHaveLength(2);
    const [event] = await harness.delivered();
    expect(event).toMatchObject({ type: 'concordance.failed', status: 'lost' });
    expect(event?.error?.code).toBe('ERR_REMOTE_JOB_LOST');
    expect(harness.outcomes[0]?.data.resubmits).toBe(1);
  });

  it('fails a query whose remote job never ends as timed_out at the deadline', async () => {
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
    const [event] = await harness.delivered();
    expect(event).toMatchObject({ status: 'timed_out', type: 'concordance.failed' });
    expect(event?.remote_job_id).toEqual(expect.any(String));
    expect(await harness.submissions()).toHaveLength(1);
  });

  it('fails a query the service rejects (422) as rejected, with the items', async () => {
    harness = await PipelineHarness.start();
    await harness.startWorker();
    // A category the service does not know passes our scheduler but not the service's validation.
    await harness.update('MRN-422', ['XXX000'], sampleRecord('bad'), 'ev-1');
    await harness.untilOutcomes(1);
    const [event] = await harness.delivered();
    expect(event).toMatchObject({ status: 'rejected', remote_job_id: null });
    expect(event?.error?.items?.[0]?.loc).toEqual(['body', 'ccsr_category']);
  });

  it('holds the whole queue for Retry-After on a 429, without burning an attempt', async () => {
    // One attempt only: a 429 counted as a failed attempt would end the query failed.
    harness = await PipelineHarness.start({
      config: testConfig({ queries: { submit_attempts: 1 } }),
      faults: {
        routes: { 'POST /v1/concordance': { rate_limit_rate: 1, retry_after_s: 2, times: 1 } },
      },
    });
    await harness.startWorker();
    const { patientServiceId } = await harness.update(
      'MRN-429',
      ['END002'],
      sampleRecord('limited'),
      'ev-1',
    );
    // BullMQ's rate limit of the patient's partition's queue (the only one without partitions).
    const queue = harness.queueOf(patientServiceId);
    await harness.logs.waitFor((e) => e.msg === 'service rate limit: holding the queue');
    expect(await queue.getRateLimitTtl()).toBeGreaterThan(0);
    await harness.untilOutcomes(1);

    const submissions = await harness.submissions();
    expect(submissions.map((s) => s.status)).toEqual([429, 202]);
    const held = harness.logs.lines.find((l) => l.includes('holding the queue'));
    expect(JSON.parse(held ?? '{}')).toMatchObject({ retry_after_ms: 2_000 });
    expect(harness.outcomes[0]?.result.outcome).toBe('completed');
  });

  it('a 429 holds the queue for every worker of the partition, not only the one it answered', async () => {
    harness = await PipelineHarness.start({
      faults: {
        routes: { 'POST /v1/concordance': { rate_limit_rate: 1, retry_after_s: 600, times: 1 } },
      },
    });
    await harness.startWorker();
    const { patientServiceId } = await harness.update(
      'MRN-429-ALL',
      ['END002'],
      sampleRecord('limited'),
      'ev-1',
    );
    const partition = harness.partitions.indexOf(patientServiceId);
    const queue = harness.queueOf(patientServiceId);
    await harness.logs.waitFor((e) => e.msg === 'service rate limit: holding the queue');
    // The held job is back in the queue, waiting.
    await eventually(
      () => queue.getJobCounts('wait'),
      (counts) => counts.wait === 1,
    );
    // Another worker of the partition takes nothing while the hold lasts…
    const other = await harness.idleQueries(partition);
    expect(await other.worker.getNextJob('other-worker', { block: false })).toBeUndefined();
    // …and waits out the hold it was told of. Once the hold is lifted, a worker takes the job.
    await queue.removeRateLimitKey();
    const later = await harness.idleQueries(partition);
    const job = await later.worker.getNextJob('later-worker', { block: false });
    expect(job?.name).toBe('END002');
    expect(job?.data).toMatchObject({ patientServiceId, ccsrCategory: 'END002', seq: 1 });
  });

  it.each([
    { status: 401, why: 'no key reaches the service' },
    { status: 403, why: 'the service does not know the key' },
  ])(
    'pauses the queue on $status ($why), burns no job, and a worker started later resumes it',
    async ({ status }) => {
      // One attempt only: a refusal counted as a failed attempt would end the query failed.
      harness = await PipelineHarness.start({
        config: testConfig({ queries: { submit_attempts: 1 } }),
      });
      // A gateway that drops the key header gives the service's 401; a wrong key its 403.
      const proxy = await startHeaderStrippingProxy(harness.simulator.url, ['x-api-key']);
      const refused =
        status === 401
          ? await harness.startWorker(API_KEY, proxy.url)
          : await harness.startWorker('not-the-key');
      const { patientServiceId } = await harness.update(
        'MRN-AUTH',
        ['END002'],
        sampleRecord('auth'),
        'ev-1',
      );
      const pause = new AuthPause(
        harness.queueOf(patientServiceId),
        harness.redis,
        harness.partitions.prefixOf(patientServiceId),
      );
      await harness.logs.waitFor(
        (e) => typeof e.msg === 'string' && e.msg.startsWith('the service refused the API key'),
      );
      expect(await pause.isPaused()).toBe(true);
      await refused.close();
      await proxy.close();
      const errors = harness.logs.lines.filter((l) =>
        l.includes('the service refused the API key'),
      );
      expect(errors).toHaveLength(1);
      expect(harness.outcomes).toHaveLength(0);

      await harness.startWorker();
      await harness.untilOutcomes(1);
      expect(await pause.isPaused()).toBe(false);
      expect(harness.outcomes[0]?.result.outcome).toBe('completed');
      const statuses = (await harness.submissions()).map((s) => s.status);
      expect(statuses.at(-1)).toBe(202);
      expect(statuses.slice(0, -1).length).toBeGreaterThan(0);
      expect(statuses.slice(0, -1).every((s) => s === status)).toBe(true);
    },
  );
});
