import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CliProcess } from '../../../tools/cli-process.ts';
import { eventually } from '../../support/eventually.ts';
import { OUTBOUND_QUEUE_LINES } from '../../support/outbound.ts';
import {
  PipelineHarness,
  sampleRecord,
  type RequestLogEntry,
} from '../../support/pipeline-harness.ts';

const QUERIES = 12;
const CATEGORIES = ['END002', 'CIR007', 'RSP009'];

/**
 * Short debounce, quick polls, and short leases of claims and polls, so that what a killed worker
 * held comes back soon — yet, as config/default.yaml asks, above service.timeout_ms times
 * (service.retry.limit + 1): a live worker's slow POST (1.5 s added here, more on a loaded machine)
 * must not outlast its lease, or the claim would come due again while it is still under way.
 */
function crashConfigFile({ batch = 5 } = {}): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-crash-')), 'config.yaml');
  writeFileSync(
    path,
    [
      'service:',
      '  timeout_ms: 5000',
      '  retry: { limit: 0 }',
      'queries:',
      '  debounce_ms: 100',
      '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 120000 }',
      '  polling: { interval_ms: 20, batch: 5, concurrency: 20, lease_ms: 6000, latency_window: 64 }',
      `  dispatch: { interval_ms: 20, batch: ${batch}, lease_ms: 6000 }`,
      '  concurrency: 20',
      ...OUTBOUND_QUEUE_LINES,
    ].join('\n'),
  );
  return path;
}

/** GETs of one remote job that were under way at the same time (both answered). */
function overlappingPolls(requests: RequestLogEntry[]): [RequestLogEntry, RequestLogEntry][] {
  const byJob = new Map<string, RequestLogEntry[]>();
  for (const r of requests) {
    if (r.method !== 'GET' || r.answered_at === null) continue;
    byJob.set(r.path, [...(byJob.get(r.path) ?? []), r]);
  }
  const overlaps: [RequestLogEntry, RequestLogEntry][] = [];
  for (const polls of byJob.values()) {
    polls.sort((a, b) => a.received_at - b.received_at);
    for (let i = 1; i < polls.length; i++) {
      const [before, after] = [polls[i - 1] as RequestLogEntry, polls[i] as RequestLogEntry];
      if (after.received_at < (before.answered_at ?? Infinity)) overlaps.push([before, after]);
    }
  }
  return overlaps;
}

/** The submissions of each (patient, category), by the age and category of their bodies. */
function submissionsByKey(submissions: RequestLogEntry[]): Map<string, RequestLogEntry[]> {
  const byKey = new Map<string, RequestLogEntry[]>();
  for (const s of submissions) {
    const body = s.body as {
      ccsr_category: string;
      assembled_patient: { demographics: { age: number } };
    };
    const key = `${body.assembled_patient.demographics.age}/${body.ccsr_category}`;
    byKey.set(key, [...(byKey.get(key) ?? []), s]);
  }
  return byKey;
}

describe('a worker process killed with SIGKILL', () => {
  let harness: PipelineHarness;
  const processes: CliProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) await p.stop('SIGKILL');
    await harness.close();
  });

  const work = async (config: string): Promise<CliProcess> => {
    const worker = new CliProcess(['--config', config, 'work'], harness.processEnv());
    processes.push(worker);
    await worker.waitForLine('workers started');
    return worker;
  };

  const updateAll = async (from = 0, to = QUERIES / CATEGORIES.length) => {
    for (let i = from; i < to; i++) {
      // The age tells the patients' submissions apart (the worker's config drops the marker).
      const record = sampleRecord(`crash-${i}`, {
        demographics: { age: 30 + i, gender: 'female', race: 'unknown' },
      });
      await harness.update(`MRN-CRASH-${i}`, CATEGORIES, record, `ev-${i}`);
    }
  };

  /** Every query ends once, completed, each with its own remote job. */
  const expectAllCompleted = async () => {
    const events = await eventually(
      () => harness.delivered(),
      (delivered) => delivered.length >= QUERIES,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(events).toHaveLength(QUERIES);
    expect(events.every((e) => e.status === 'completed')).toBe(true);
    const keys = events.map((e) => `${e.patient_id}/${e.ccsr_category}`);
    expect(new Set(keys).size).toBe(QUERIES);
    expect(new Set(events.map((e) => e.remote_job_id)).size).toBe(QUERIES);
  };

  it('during leased polls: two other workers finish every query, none submitted twice, no job polled by both at once', async () => {
    // Slow polls, so that the kill finds some of them in flight (leased, GET under way).
    harness = await PipelineHarness.start({
      latencyMs: [2_000, 4_000],
      faults: { routes: { 'GET /v1/concordance/:job_id': { added_latency_ms: 300 } } },
    });
    const config = crashConfigFile();
    const first = await work(config);
    await updateAll();
    // Every query has its remote job stored and waits in the due set of polls, some polls out.
    await eventually(
      () => harness.polling(),
      (polling) => polling === QUERIES,
    );
    await eventually(
      async () => (await harness.requests()).filter((r) => r.method === 'GET').length,
      (gets) => gets > 0,
    );
    expect(await first.stop('SIGKILL')).toBeNull();

    // Two workers at once: each poll is leased by one of them only.
    const [second, third] = await Promise.all([work(config), work(config)]);
    await expectAllCompleted();

    expect(await harness.submissions()).toHaveLength(QUERIES);
    expect(overlappingPolls(await harness.requests())).toEqual([]);
    expect([second, third].some((w) => w.lines.some((l) => l.includes('query finished')))).toBe(
      true,
    );
  }, 120_000);

  it('during the relay: the outbox is moved on by the next worker, every query added and submitted once', async () => {
    harness = await PipelineHarness.start({ latencyMs: [200, 400] });
    // One entry per relay round, so that the relay is at work while updates come in.
    const config = crashConfigFile({ batch: 1 });
    const first = await work(config);
    const patients = QUERIES / CATEGORIES.length;
    await updateAll(0, patients / 2);
    // The relay is moving the outbox: the first queries are jobs of the queue already.
    await eventually(
      () => harness.queryJobs(),
      (jobs) => jobs > 0,
    );
    // The rest of the updates arrive while the worker is killed, and while no worker runs.
    const rest = updateAll(patients / 2, patients);
    expect(await first.stop('SIGKILL')).toBeNull();
    await rest;

    // The killed worker held the partitions' relay leases: the next one takes over after them.
    await work(config);
    await expectAllCompleted();
    expect(await harness.submissions()).toHaveLength(QUERIES);
    expect(await harness.outboxSize()).toBe(0);
  }, 120_000);

  it('during a submission batch: every query completes; only a POST under way at the kill is sent again', async () => {
    // Slow submissions, so that the kill finds them in flight.
    harness = await PipelineHarness.start({
      latencyMs: [200, 400],
      faults: { routes: { 'POST /v1/concordance': { added_latency_ms: 1_500 } } },
    });
    const config = crashConfigFile();
    const first = await work(config);
    await updateAll();
    await eventually(
      async () => (await harness.submissions()).length,
      (posts) => posts >= QUERIES / 2,
    );
    expect(await first.stop('SIGKILL')).toBeNull();
    // Seen dead: a POST the service received before this may have come from the killed worker.
    const diedAt = Date.now();

    await work(config);
    await expectAllCompleted();

    // The documented window: a submission sent but not yet stored when its worker died is sent
    // again (and counted as a possible duplicate); nothing else is.
    for (const [key, posts] of submissionsByKey(await harness.submissions())) {
      expect(posts.length, key).toBeLessThanOrEqual(2);
      if (posts.length === 2) expect(posts[0]?.received_at, key).toBeLessThanOrEqual(diedAt);
    }
  }, 120_000);
});
