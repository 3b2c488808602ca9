import { afterEach, describe, expect, it } from 'vitest';
import { CliProcess } from '../../../tools/cli-process.ts';
import { eventually } from '../../support/eventually.ts';
import { PipelineHarness, sampleRecord } from '../../support/pipeline-harness.ts';
import { outboundConfigFile } from '../../support/outbound.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { TcpProxy } from '../../../tools/tcp-proxy.ts';

interface LogLine {
  msg: string;
  queue?: string;
  outcome?: string;
  shutdown_ms?: number;
}

const parsed = (p: CliProcess) => p.lines.map((l) => JSON.parse(l) as LogLine);

/**
 * A `concordance-worker work` process whose Redis (behind a TCP proxy) goes away while work is
 * queued. The queue itself is written directly (as the ingest process would, on its own
 * connection), so the work waits in Redis for the worker to come back to it.
 */
describe('a worker process whose Redis goes away', () => {
  let harness: PipelineHarness | undefined;
  let proxy: TcpProxy | undefined;
  const processes: CliProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) await p.stop('SIGKILL');
    await proxy?.close();
    await harness?.close();
    harness = undefined;
    proxy = undefined;
  });

  async function startWork(graceMs: number) {
    harness = await PipelineHarness.start({ latencyMs: [50, 100] });
    proxy = await TcpProxy.start(testRedisUrl());
    const work = new CliProcess(['--config', outboundConfigFile(), 'work'], {
      ...harness.processEnv(),
      REDIS_URL: proxy.redisUrl,
      SHUTDOWN_GRACE_MS: String(graceMs),
    });
    processes.push(work);
    await work.waitForLine('workers started');
    await harness.update('MRN-OUT-1', ['END002'], sampleRecord('out-1'), 'ev-1');
    await eventually(
      () => harness?.delivered() ?? Promise.resolve([]),
      (d) => d.length === 1,
    );
    return { work, harness, proxy };
  }

  for (const mode of ['refuse', 'hang'] as const) {
    it(`${mode}: resumes the queued work once Redis is back, then exits 0 on SIGTERM`, async () => {
      const { work, harness, proxy } = await startWork(25_000);
      await (mode === 'refuse' ? proxy.refuse() : proxy.hang());
      // Work queued during the outage.
      await harness.update('MRN-OUT-2', ['END002'], sampleRecord('out-2'), 'ev-2');
      // The worker noticed (an error on refusal; the heartbeat's unanswered PING on a hang).
      await work.waitForLine('redis unreachable');
      await proxy.forward();
      await eventually(
        () => harness.delivered(),
        (d) => d.length === 2,
        { timeoutMs: 60_000 },
      );
      await work.waitForLine('redis reachable again');
      const t0 = Date.now();
      expect(await work.stop('SIGTERM')).toBe(0);
      const log = parsed(work);
      const stopped = log.find((l) => l.msg === 'stopped');
      console.log(
        JSON.stringify({
          figure: `worker shutdown after redis: ${mode}`,
          shutdown_ms: stopped?.shutdown_ms,
          sigterm_to_exit_ms: Date.now() - t0,
        }),
      );
      // Closed gracefully: no worker forced or abandoned.
      expect(log.filter((l) => l.outcome === 'forced' || l.outcome === 'abandoned')).toEqual([]);
      expect(log.filter((l) => l.msg.startsWith('redis unreachable'))).toHaveLength(1);
      expect(log.filter((l) => l.msg === 'redis reachable again')).toHaveLength(1);
    }, 120_000);
  }

  for (const mode of ['refuse', 'hang'] as const) {
    it(`${mode}: SIGTERM while Redis is still away exits 0 within the grace period; the work is done later`, async () => {
      const { work, harness, proxy } = await startWork(6_000);
      await (mode === 'refuse' ? proxy.refuse() : proxy.hang());
      await work.waitForLine('redis unreachable');
      await harness.update('MRN-OUT-3', ['END002'], sampleRecord('out-3'), 'ev-3');
      const t0 = Date.now();
      expect(await work.stop('SIGTERM')).toBe(0);
      const log = parsed(work);
      console.log(
        JSON.stringify({
          figure: `worker shutdown during redis: ${mode} (grace 6000 ms)`,
          sigterm_to_exit_ms: Date.now() - t0,
          outcomes: log.flatMap((l) => (l.outcome === undefined ? [] : [l.outcome])),
        }),
      );
      expect(log.find((l) => l.msg === 'stopped')).toBeDefined();
      if (mode === 'refuse') {
        // The worker could not wait for Redis: it closed without waiting (its jobs come back).
        // The relay and poller could not leave cleanly, whatever the BullMQ worker's close came
        // to (a run under load once had it close gracefully, and the registry then reported the
        // queue as closed: it now reports the worse of the two). The whole log in the message.
        const lines = log.map(({ msg, queue, outcome }) => ({ msg, queue, outcome }));
        expect(
          log.filter((l) => l.outcome === 'forced'),
          JSON.stringify(lines),
        ).toEqual([expect.objectContaining({ queue: 'concordance-queries' })]);
      }

      await proxy.forward();
      const next = new CliProcess(['--config', outboundConfigFile(), 'work'], {
        ...harness.processEnv(),
        REDIS_URL: proxy.redisUrl,
      });
      processes.push(next);
      await eventually(
        () => harness.delivered(),
        (d) => d.length === 2,
        { timeoutMs: 60_000 },
      );
      expect(await next.stop('SIGTERM')).toBe(0);
    }, 120_000);
  }

  it('SIGTERM just after Redis came back (connections still reconnecting): closes gracefully, exits 0', async () => {
    const { work, proxy } = await startWork(25_000);
    await proxy.refuse();
    await work.waitForLine('redis unreachable');
    await proxy.forward();
    expect(await work.stop('SIGTERM')).toBe(0);
    const log = parsed(work);
    expect(log.filter((l) => l.outcome === 'forced' || l.outcome === 'abandoned')).toEqual([]);
    expect(log.find((l) => l.msg === 'stopped')).toBeDefined();
  }, 120_000);
});
