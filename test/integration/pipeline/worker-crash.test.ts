import { afterEach, describe, expect, it } from 'vitest';
import type { QueryJobData } from '../../../src/queries/query-job.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { eventually } from '../../support/eventually.ts';
import { OUTBOUND_QUEUE_LINES } from '../../support/outbound.ts';
import { PipelineHarness, sampleRecord } from '../../support/pipeline-harness.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const QUERIES = 12;
const CATEGORIES = ['END002', 'CIR007', 'RSP009'];

/** Short debounce, quick polls, and a short lock so that a killed worker's jobs come back soon. */
function crashConfigFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cw-crash-')), 'config.yaml');
  writeFileSync(
    path,
    [
      'queries:',
      '  debounce_ms: 100',
      '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 120000 }',
      '  lock_duration_ms: 2000',
      '  concurrency: 20',
      ...OUTBOUND_QUEUE_LINES,
    ].join('\n'),
  );
  return path;
}

describe('a worker process killed with SIGKILL', () => {
  let harness: PipelineHarness;
  const processes: CliProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) await p.stop('SIGKILL');
    await harness.close();
  });

  it('loses nothing: another worker finishes every query, each submitted exactly once', async () => {
    // Slow polls, so that the kill finds some of them in flight (active jobs holding a lock).
    harness = await PipelineHarness.start({
      latencyMs: [2_000, 4_000],
      faults: { routes: { 'GET /v1/concordance/:job_id': { added_latency_ms: 300 } } },
    });
    const config = crashConfigFile();
    const first = new CliProcess(['--config', config, 'work'], harness.processEnv());
    processes.push(first);
    await first.waitForLine('workers started');

    for (let i = 0; i < QUERIES / CATEGORIES.length; i++) {
      await harness.update(`MRN-CRASH-${i}`, CATEGORIES, sampleRecord(`crash-${i}`), `ev-${i}`);
    }
    // Every query has persisted its remote job id and is polling, some polls in flight.
    await eventually(
      async () => {
        // Every partition's queue (one without partitions).
        const jobs = await harness.jobs(['active', 'delayed', 'wait']);
        return jobs.filter((job) => (job.data as QueryJobData).remoteJobId !== undefined).length;
      },
      (polling) => polling === QUERIES,
    );
    expect(await first.stop('SIGKILL')).toBeNull();

    const second = new CliProcess(['--config', config, 'work'], harness.processEnv());
    processes.push(second);
    await second.waitForLine('workers started');
    const events = await eventually(
      () => harness.delivered(),
      (delivered) => delivered.length === QUERIES,
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    expect(events.every((e) => e.status === 'completed')).toBe(true);
    const keys = events.map((e) => `${e.patient_id}/${e.ccsr_category}`);
    expect(new Set(keys).size).toBe(QUERIES);
    const submissions = await harness.submissions();
    expect(submissions).toHaveLength(QUERIES);
    const remoteIds = new Set(events.map((e) => e.remote_job_id));
    expect(remoteIds.size).toBe(QUERIES);
    expect(second.lines.some((l) => l.includes('query finished'))).toBe(true);
  }, 120_000);
});
