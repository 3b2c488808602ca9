import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import { sampleRecord } from '../../support/pipeline-harness.ts';
import {
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { TcpProxy } from '../../../tools/tcp-proxy.ts';
import { fixture, frame, MllpClient } from '../hl7v2/support/hl7v2-harness.ts';

const API_KEY = 'outage-test-api-key';
const TOKEN = 'outage-test-ingest-token-0123456789';

interface LogLine {
  msg: string;
  role?: string;
  url?: string;
  level: number;
  shutdown_ms?: number;
}

/**
 * `concordance-worker start` (ingest and workers in one process) with Redis behind a TCP proxy:
 * started while Redis refuses connections, then Redis comes, then hangs, then comes back, then
 * SIGTERM. Timings are printed (the README quotes them), never asserted.
 */
describe('start: Redis absent at start-up, then hung', () => {
  let p: PipelineProcesses | undefined;
  let proxy: TcpProxy | undefined;
  afterEach(async () => {
    await proxy?.forward();
    await p?.close();
    await proxy?.close();
    p = undefined;
    proxy = undefined;
  });

  it('opens its ports at once, answers 503 until Redis answers, logs each state change once, and exits 0', async () => {
    proxy = await TcpProxy.start(testRedisUrl());
    await proxy.refuse();
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      latency: '50-100',
      redisUrl: proxy.redisUrl,
      until: 'ingest ports open',
      env: { SHUTDOWN_GRACE_MS: '20000' },
      configLines: [
        'presets: { rules: [{ ccsr_category: END002 }] }',
        'queries:',
        '  debounce_ms: 100',
        '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
      ],
    });
    const start = p.start;
    const lines = () => start.lines.map((l) => JSON.parse(l) as LogLine);
    const workUrl = (JSON.parse(await start.waitForLine('health server listening')) as LogLine).url;
    const ingestUrl = p.ingestUrl;
    const post = (id: string) =>
      fetch(`${ingestUrl}/v1/record-updates`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ patient_id: id, assembled_patient: sampleRecord(id) }),
      });
    const status = async (url: string) => (await fetch(url)).status;
    const mllpAnswer = async () => {
      const client = await MllpClient.open(p?.mllpPort ?? 0);
      client.write(frame(fixture('LAB-ORU-2.hl7')));
      await client.closedPromise;
      return client.acks;
    };

    // Redis refuses: both ports answer; nothing is ready; updates get 503, MLLP no ACK.
    expect(await status(`${ingestUrl}/healthz`)).toBe(200);
    expect(await status(`${workUrl}/healthz`)).toBe(200);
    expect(await status(`${ingestUrl}/readyz`)).toBe(503);
    expect(await status(`${workUrl}/readyz`)).toBe(503);
    let t0 = Date.now();
    expect(start.lines.some((l) => l.includes('ingest listening'))).toBe(false);
    const refused = await post('MRN-OUTAGE-0');
    const refusedMs = Date.now() - t0;
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    t0 = Date.now();
    expect(await mllpAnswer()).toEqual([]);
    console.log(
      JSON.stringify({
        figure: 'refused redis',
        http_503_ms: refusedMs,
        mllp_close_ms: Date.now() - t0,
      }),
    );

    // Many reconnect attempts, still one log line per role.
    await proxy.reset();
    const attempts = proxy.accepted;
    await eventually(
      async () => proxy?.accepted ?? 0,
      (n) => n >= attempts + 10,
    );

    await proxy.forward();
    await eventually(
      () => Promise.all([status(`${ingestUrl}/readyz`), status(`${workUrl}/readyz`)]),
      (s) => s.every((code) => code === 200),
    );
    expect((await post('MRN-OUTAGE-1')).status).toBe(202);
    await eventually(
      () => p?.delivered() ?? Promise.resolve([]),
      (d) => d.length === 1,
    );

    // Redis hangs: the ingest answers 503 (MLLP: no ACK) instead of waiting for it.
    await proxy.hang();
    t0 = Date.now();
    const hung = await post('MRN-OUTAGE-2');
    const httpMs = Date.now() - t0;
    expect(hung.status).toBe(503);
    t0 = Date.now();
    expect(await mllpAnswer()).toEqual([]);
    const mllpMs = Date.now() - t0;
    console.log(
      JSON.stringify({ figure: 'hung redis', http_503_ms: httpMs, mllp_close_ms: mllpMs }),
    );

    // Back: the same update is accepted and its query runs.
    await proxy.forward();
    const retried = await eventually(
      () => post('MRN-OUTAGE-2').then((r) => r.status),
      (code) => code === 202,
    );
    expect(retried).toBe(202);
    await eventually(
      () => p?.delivered() ?? Promise.resolve([]),
      (d) => d.length === 2,
      { timeoutMs: 60_000 },
    );

    // Each role has logged Redis back (the worker's heartbeat may see the hang end a PING later).
    const changesOf = (role: string) =>
      lines()
        .filter((l) => l.role === role && /^redis (unreachable|reachable again)/.test(l.msg))
        .map((l) => (l.msg.startsWith('redis unreachable') ? 'lost' : 'back'));
    await eventually(
      async () => ['ingest', 'work'].map((role) => changesOf(role).at(-1)),
      (last) => last.every((state) => state === 'back'),
    );

    expect(await start.stop('SIGTERM')).toBe(0);
    const log = lines();
    const stopped = log.find((l) => l.msg === 'stopped');
    console.log(
      JSON.stringify({ figure: 'shutdown after outages', shutdown_ms: stopped?.shutdown_ms }),
    );
    expect(stopped).toBeDefined();
    // Nothing but JSON lines (JSON.parse above would have thrown), and for each role the Redis
    // state changes alternate lost/back, starting lost and ending back.
    for (const role of ['ingest', 'work']) {
      const changes = changesOf(role);
      expect(changes.length).toBeGreaterThanOrEqual(2);
      expect(changes.every((c, i) => c === (i % 2 === 0 ? 'lost' : 'back'))).toBe(true);
      expect(changes.at(-1)).toBe('back');
    }
    // The ingest saw two outages (refused, hung), each logged once.
    expect(
      log.filter((l) => l.role === 'ingest' && l.msg.startsWith('redis unreachable')),
    ).toHaveLength(2);
    expect(log.filter((l) => l.msg === 'queue error')).toEqual([]);
  }, 120_000);

  it('stops cleanly (exit 0) on SIGTERM while Redis never answered', async () => {
    proxy = await TcpProxy.start(testRedisUrl());
    await proxy.refuse();
    p = await startPipelineProcesses({
      apiKey: API_KEY,
      token: TOKEN,
      redisUrl: proxy.redisUrl,
      until: 'ingest ports open',
      configLines: ['presets: { rules: [{ ccsr_category: END002 }] }'],
    });
    await p.start.waitForLine('health server listening');
    await p.start.waitForLine('redis unreachable');
    expect(await p.start.stop('SIGTERM')).toBe(0);
    const log = p.start.lines.map((l) => JSON.parse(l) as LogLine);
    expect(log.find((l) => l.msg === 'stopped')).toBeDefined();
    expect(log.some((l) => l.msg === 'workers started')).toBe(false);
  }, 60_000);
});
