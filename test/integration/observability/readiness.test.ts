import { newOutboundKey } from '../../support/outbound.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { runWorker, type RunningWorker } from '../../../src/runtime/run-worker.ts';
import { eventually } from '../../support/eventually.ts';
import { captureLogs, type LogCapture } from '../../support/log-capture.ts';
import { PrivateRedis } from './support/private-redis.ts';

interface Probe {
  status: number;
  body: { status?: string; checks?: Record<string, boolean> };
}

/** A worker's `/readyz` reports the service without deciding on it; none asked yet here. */
const NO_REQUESTS = { up: null, hosts: [] };

async function probe(url: string): Promise<Probe> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Probe['body'] };
}

/**
 * The worker process's health server: `/healthz` is liveness only, `/readyz` is 503 while Redis
 * does not answer or the workers are not running. The worker runs in this process against a
 * `redis-server` of the test's own, which the test stops and starts again.
 */
describe('worker /healthz and /readyz', () => {
  let redis: PrivateRedis | undefined;
  let running: RunningWorker | undefined;
  let logs: LogCapture;

  afterEach(async () => {
    await redis?.start().catch(() => undefined); // a clean close needs Redis back
    await running?.close();
    await redis?.stop();
    running = undefined;
    redis = undefined;
  });

  async function startWorker(): Promise<string> {
    redis = await PrivateRedis.start();
    const config = loadConfig({
      env: {
        REDIS_URL: redis.url,
        REDIS_PREFIX: '{cw-readyz}',
        SERVICE_BASE_URL: 'http://127.0.0.1:9',
        SERVICE_API_KEY: 'readyz-test-key',
        CROSSWALK_KEY: generateCrosswalkSecret(),
        OUTBOUND_KEY: newOutboundKey(),
        METRICS_PORT: '0',
      },
    });
    logs = captureLogs('info');
    running = await runWorker(
      {
        ...config,
        worker: { ...config.worker, host: '127.0.0.1' },
        // A delivery channel (the pipeline refuses to start without one).
        delivery: {
          ...config.delivery,
          outbound_queue: { ...config.delivery.outbound_queue, enabled: true },
        },
      },
      logs.logger,
    );
    await running.ready;
    return running.url;
  }

  it('is ready while Redis answers and the workers run; not ready while Redis is gone, ready again when it is back', async () => {
    const url = await startWorker();
    expect(await probe(`${url}/readyz`)).toEqual({
      status: 200,
      body: { status: 'ready', checks: { redis: true, workers: true }, service: NO_REQUESTS },
    });
    expect(await probe(`${url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });

    await redis?.stop();
    expect(await probe(`${url}/readyz`)).toEqual({
      status: 503,
      body: { status: 'not ready', checks: { redis: false, workers: true }, service: NO_REQUESTS },
    });
    // Liveness does not depend on Redis: restarting the process would not bring it back.
    expect(await probe(`${url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });

    await redis?.start();
    // The connection comes back on its own (ioredis reconnects): wait for the process to see it.
    const back = await eventually(
      () => probe(`${url}/readyz`),
      (p) => p.status === 200,
    );
    expect(back.body).toEqual({
      status: 'ready',
      checks: { redis: true, workers: true },
      service: NO_REQUESTS,
    });

    // The outage is in the JSON log once, however many reconnect attempts it took.
    await logs.waitFor((e) => e.msg === 'redis reachable again');
    const messages = logs.lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages.filter((m) => m.startsWith('redis unreachable'))).toHaveLength(1);
    expect(messages.filter((m) => m === 'queue error')).toEqual([]);
  });

  it('is not ready once the workers stopped, while still alive', async () => {
    const url = await startWorker();
    const entry = running?.workers.entries[0];
    expect(entry?.name).toBe('concordance-queries');
    await entry?.stop?.();

    expect(await probe(`${url}/readyz`)).toEqual({
      status: 503,
      body: { status: 'not ready', checks: { redis: true, workers: false }, service: NO_REQUESTS },
    });
    expect(await probe(`${url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
  });
});
