import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { captureLogs } from '../../test/support/log-capture.ts';
import {
  failureStatus,
  isServiceFailure,
  ServiceHealth,
  type ServiceAttempt,
  type ServiceHostHealth,
} from './service-health.ts';

const HOST = 'cgs.example.org:8443';
const POST = 'POST /v1/concordance';
const refused: ServiceAttempt = {
  host: HOST,
  endpoint: POST,
  status: 'network',
  code: 'ECONNREFUSED',
};
const unavailable: ServiceAttempt = { host: HOST, endpoint: POST, status: 503 };
const accepted: ServiceAttempt = { host: HOST, endpoint: POST, status: 202 };

/** A gauge's value for `host`, as a scrape reads it. */
async function gauge(registry: Registry, name: string, host = HOST): Promise<number | undefined> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.find((v) => v.labels.host === host)?.value;
}

function setup(summaryIntervalMs = 60_000) {
  const logs = captureLogs('info');
  const registry = new Registry();
  const clock = { now: 1_800_000_000_000 };
  const health = new ServiceHealth({
    registry,
    logger: logs.logger,
    summaryIntervalMs,
    recordIntervalMs: 5_000,
    now: () => clock.now,
  });
  const entries = () => logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logs, registry, clock, health, entries };
}

describe('isServiceFailure and failureStatus', () => {
  it('counts no answer, 5xx, refused keys and overload as failures; answers about the request as up', () => {
    for (const status of [
      'network',
      'timeout',
      500,
      502,
      503,
      504,
      401,
      403,
      407,
      408,
      429,
    ] as const)
      expect(isServiceFailure(status), String(status)).toBe(true);
    for (const status of [200, 202, 400, 404, 409, 413, 422] as const)
      expect(isServiceFailure(status), String(status)).toBe(false);
  });

  it('names an HTTP status, else the network code', () => {
    expect(failureStatus(unavailable)).toBe('503');
    expect(failureStatus(refused)).toBe('ECONNREFUSED');
    expect(failureStatus({ host: HOST, endpoint: POST, status: 'timeout' })).toBe('timeout');
  });
});

describe('ServiceHealth', () => {
  it('warns at the first failure, naming the host and status; then once per interval with the count', () => {
    const { clock, health, entries } = setup(60_000);
    health.observe(accepted);
    health.observe(refused);
    expect(entries()).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'service request failed',
        service_host: HOST,
        status: 'ECONNREFUSED',
        endpoint: POST,
        consecutive_failures: 1,
      }),
    ]);
    // Seven more failures within the interval: no line.
    for (let i = 0; i < 7; i++) {
      clock.now += 5_000;
      health.observe(i % 2 === 0 ? unavailable : refused);
    }
    expect(entries()).toHaveLength(1);
    clock.now += 30_000;
    health.observe(unavailable);
    expect(entries()).toHaveLength(2);
    expect(entries()[1]).toMatchObject({
      level: 40,
      msg: 'service requests still failing',
      service_host: HOST,
      status: '503',
      failures: 8,
      consecutive_failures: 9,
    });
    // The next summary counts only what came after this one.
    clock.now += 60_000;
    health.observe(refused);
    expect(entries()[2]).toMatchObject({ failures: 1, consecutive_failures: 10 });
  });

  it('warns at the very first request when it fails, and says when the service answers again', () => {
    const { clock, health, entries } = setup();
    health.observe(unavailable);
    clock.now += 1_000;
    health.observe(accepted);
    health.observe(accepted);
    clock.now += 1_000;
    health.observe(refused);
    expect(entries().map((e) => [e.level, e.msg])).toEqual([
      [40, 'service request failed'],
      [30, 'service answering again'],
      [40, 'service request failed'],
    ]);
    expect(entries()[1]).toMatchObject({ service_host: HOST, failures: 1 });
  });

  it('sets cw_service_up and cw_service_consecutive_failures per host from the last outcome', async () => {
    const { registry, health } = setup();
    health.observe(accepted);
    expect(await gauge(registry, 'cw_service_up')).toBe(1);
    expect(await gauge(registry, 'cw_service_consecutive_failures')).toBe(0);
    health.observe(refused);
    health.observe(unavailable);
    expect(await gauge(registry, 'cw_service_up')).toBe(0);
    expect(await gauge(registry, 'cw_service_consecutive_failures')).toBe(2);
    // Another host is apart.
    health.observe({ ...accepted, host: 'other.example:443' });
    expect(await gauge(registry, 'cw_service_up', 'other.example:443')).toBe(1);
    expect(await gauge(registry, 'cw_service_up')).toBe(0);
    health.observe(accepted);
    expect(await gauge(registry, 'cw_service_up')).toBe(1);
    expect(await gauge(registry, 'cw_service_consecutive_failures')).toBe(0);
  });

  it('shares its gauges with a second instance on the same registry', async () => {
    const { registry, health, logs } = setup();
    const again = new ServiceHealth({ registry, logger: logs.logger });
    again.observe(refused);
    expect(await gauge(registry, 'cw_service_up')).toBe(0);
    health.observe(accepted);
    expect(await gauge(registry, 'cw_service_up')).toBe(1);
  });

  it('records each change of state at once, other outcomes at most once per interval', async () => {
    const { clock, health } = setup();
    const recorded: ServiceHostHealth[] = [];
    health.recordTo(async (h) => {
      recorded.push(h);
    });
    health.observe(accepted);
    clock.now += 1_000;
    health.observe(accepted);
    clock.now += 1_000;
    health.observe(refused);
    clock.now += 1_000;
    health.observe(refused);
    clock.now += 5_000;
    health.observe(unavailable);
    expect(recorded.map((h) => [h.up, h.consecutiveFailures])).toEqual([
      [true, 0],
      [false, 1],
      [false, 3],
    ]);
    expect(recorded[2]).toEqual({
      host: HOST,
      up: false,
      consecutiveFailures: 3,
      lastSuccessAt: 1_800_000_001_000,
      lastFailureAt: 1_800_000_008_000,
      lastFailure: { status: '503', endpoint: POST },
    });
    expect(health.hosts()).toEqual([recorded[2]]);
  });

  it('is not failed by a sink that throws or rejects', () => {
    const { health } = setup();
    health.recordTo(() => {
      throw new Error('sync');
    });
    expect(() => health.observe(refused)).not.toThrow();
    health.recordTo(() => Promise.reject(new Error('async')));
    expect(() => health.observe(accepted)).not.toThrow();
  });
});
