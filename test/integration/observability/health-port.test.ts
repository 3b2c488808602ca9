import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { freePort } from '../../../tools/local-redis.ts';
import { eventually } from '../../support/eventually.ts';
import { newOutboundKey, outboundConfigFile } from '../../support/outbound.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';

interface Answer {
  status: number;
  body: string;
}

async function get(url: string): Promise<Answer> {
  try {
    const response = await fetch(url);
    return { status: response.status, body: await response.text() };
  } catch {
    return { status: 0, body: '' }; // not listening yet
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The environment of a pipeline role; the health port is `METRICS_PORT`, as in the image. */
async function pipelineEnv(healthPort: number): Promise<Record<string, string>> {
  const redis = await isolatedRedis();
  cleanups.push(() => redis.cleanup());
  return {
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: redis.prefix,
    SERVICE_BASE_URL: 'http://127.0.0.1:9',
    SERVICE_API_KEY: randomBytes(20).toString('hex'),
    INGEST_TOKENS: randomBytes(24).toString('base64'),
    CROSSWALK_KEY: generateCrosswalkSecret(),
    OUTBOUND_KEY: newOutboundKey(),
    INGEST_PORT: '0',
    INGEST_HOST: '127.0.0.1',
    MLLP_PORT: '0',
    METRICS_PORT: String(healthPort),
    LOG_LEVEL: 'info',
  };
}

/**
 * Every long-running role serves `/healthz`, `/readyz` and `/metrics` on the one health port
 * (`METRICS_PORT`), so that one probe (the image's HEALTHCHECK) fits each of them; SIGTERM then
 * ends it with exit code 0.
 */
describe('one health port for every long-running role', () => {
  const roles: { role: string; args: () => string[]; checks: string[]; metric: string }[] = [
    {
      role: 'simulator',
      args: () => ['simulator', '--port', '0'],
      checks: ['simulator'],
      metric: 'process_cpu_user_seconds_total',
    },
    {
      role: 'ingest',
      args: () => ['--config', outboundConfigFile(), 'ingest'],
      checks: ['redis', 'ingest'],
      metric: 'cw_ingest_events_total',
    },
    {
      role: 'work',
      args: () => ['--config', outboundConfigFile(), 'work'],
      checks: ['redis', 'workers'],
      metric: 'cw_polls_total',
    },
    {
      role: 'start',
      args: () => ['--config', outboundConfigFile(), 'start'],
      checks: ['redis', 'workers', 'ingest'],
      metric: 'cw_ingest_events_total',
    },
  ];

  for (const { role, args, checks, metric } of roles) {
    it(`${role} answers /healthz, /readyz and /metrics on METRICS_PORT, and exits 0 on SIGTERM`, async () => {
      const port = await freePort();
      const env = role === 'simulator' ? { METRICS_PORT: String(port) } : await pipelineEnv(port);
      const proc = new CliProcess(args(), env);
      cleanups.push(() => proc.stop('SIGKILL'));
      const base = `http://127.0.0.1:${port}`;

      const health = await eventually(
        () => get(`${base}/healthz`),
        (a) => a.status !== 0 || proc.child.exitCode !== null,
      );
      expect(health, proc.lines.join('\n')).toEqual({ status: 200, body: '{"status":"ok"}' });
      const ready = await eventually(
        () => get(`${base}/readyz`),
        (a) => a.status === 200,
      );
      expect(JSON.parse(ready.body)).toEqual({
        status: 'ready',
        checks: Object.fromEntries(checks.map((name) => [name, true])),
        // The workers report the service beside their checks (no request made yet here).
        ...(checks.includes('workers') ? { service: { up: null, hosts: [] } } : {}),
      });
      const metrics = await get(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.body).toContain(`# TYPE ${metric} `);

      expect(await proc.stop('SIGTERM'), proc.lines.join('\n')).toBe(0);
    });
  }
});
