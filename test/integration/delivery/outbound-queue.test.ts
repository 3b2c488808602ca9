import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createDecipheriv, hkdfSync } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openOutboundEvent } from '../../../src/delivery/open-outbound-event.ts';
import { OutboundKeyError } from '../../../src/delivery/outbound-key-error.ts';
import { OutboundQueueChannel } from '../../../src/delivery/outbound-queue-channel.ts';
import { OutboundQueueMetrics, outboundLag } from '../../../src/delivery/outbound-queue-metrics.ts';
import { newOutboundKey } from '../../support/outbound.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { scanRedisFor } from '../../support/scan-redis.ts';
import { makeEvent } from './delivery-fixture.ts';

const PLANTED = 'MRN-OUTBOUND-PLANTED-42';
const DAY_MS = 86_400_000;

let redis: Awaited<ReturnType<typeof isolatedRedis>>;
const channels: OutboundQueueChannel[] = [];
beforeEach(async () => {
  redis = await isolatedRedis();
});
afterEach(async () => {
  for (const c of channels.splice(0)) await c.close();
  await redis.cleanup();
});

function channel(key: string, options: { now?: () => number; registry?: Registry } = {}) {
  const c = new OutboundQueueChannel({
    connection: redis.redis,
    prefix: redis.prefix,
    name: 'concordance-results',
    retention: { count: 100, age_s: 3_600, waiting_age_s: 7 * 86_400 },
    key,
    now: options.now,
    metrics: options.registry && new OutboundQueueMetrics(options.registry),
  });
  channels.push(c);
  return c;
}

/** The documented format, opened with nothing but node:crypto (as a Java/C#/Python consumer would). */
function openPerSpec(data: { id: string; patient_id_sealed: string }, key: string): string {
  const keyBytes = Buffer.from(key, 'base64');
  const aesKey = Buffer.from(
    hkdfSync('sha256', keyBytes, Buffer.alloc(0), 'concordance-worker outbound v1', 32),
  );
  const raw = Buffer.from(data.patient_id_sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', aesKey, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(data.id, 'utf8'));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** `concordance-worker outbound open ARGS` with `stdin`; its stdout lines and exit code. */
async function openCli(env: Record<string, string>, args: string[], stdin = '') {
  const main = new URL('../../../src/cli/main.ts', import.meta.url).pathname;
  const child = spawn(process.execPath, [main, 'outbound', 'open', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  child.stdin.end(stdin);
  const [code] = (await once(child, 'exit')) as [number | null];
  return {
    code,
    lines: Buffer.concat(out).toString('utf8').split('\n').filter(Boolean),
    stderr: Buffer.concat(err).toString('utf8'),
  };
}

describe('outbound queue', () => {
  it('carries patient_id sealed with OUTBOUND_KEY only; the documented format opens it', async () => {
    const key = newOutboundKey();
    const c = channel(key);
    const event = makeEvent({ patient_id: PLANTED });
    const anonymous = makeEvent({ patient_id: null });
    await c.deliver(event);
    await c.deliver(anonymous);
    await c.deliver(event); // a redelivery adds nothing

    const jobs = await c.queue.getJobs(['wait'], 0, -1, true);
    expect(jobs.map((j) => j.id)).toEqual([event.id, anonymous.id]);
    const [data, nullData] = jobs.map((j) => j.data as unknown as Record<string, unknown>);
    expect(data).not.toHaveProperty('patient_id');
    expect(JSON.stringify(data)).not.toContain(PLANTED);
    expect(data?.patient_id_sealed).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(nullData?.patient_id_sealed).toBeNull();
    expect(await scanRedisFor(redis.redis, redis.prefix, [PLANTED])).toEqual([]);

    // The package's opener and the documented recipe agree.
    expect(openOutboundEvent(data, key)).toEqual(event);
    expect(openOutboundEvent(nullData, key)).toEqual(anonymous);
    expect(openPerSpec(data as { id: string; patient_id_sealed: string }, key)).toBe(PLANTED);

    // Another key, or the sealed value moved to another event, opens nothing.
    expect(() => openOutboundEvent(data, newOutboundKey())).toThrow(OutboundKeyError);
    expect(() => openOutboundEvent({ ...data, id: anonymous.id }, key)).toThrow(OutboundKeyError);
    // During a rotation a consumer may hold both keys: the one that fits wins.
    expect(openOutboundEvent(data, [newOutboundKey(), key])).toEqual(event);
    // A malformed key is a configuration error, said as such.
    expect(() => openOutboundEvent(data, 'too-short')).toThrow(/OUTBOUND_KEY must/);
  });

  it('drops waiting events nobody consumed within waiting_age_s, counted, and keeps the rest', async () => {
    const key = newOutboundKey();
    const registry = new Registry();
    const [first, old, fresh] = [makeEvent(), makeEvent(), makeEvent()];
    const t0 = Date.now();
    let now = t0;
    const c = channel(key, { registry, now: () => now });
    await c.deliver(first); // looks for expired events: none
    now = t0 - 8 * DAY_MS; // an event made 8 days ago (no look: the last was "later")
    await c.deliver(old);
    now = t0 + 61_000; // a minute after the last look: this hand-over looks again
    await c.deliver(fresh);
    expect((await c.queue.getJobs(['wait'], 0, -1, true)).map((j) => j.id)).toEqual([
      first.id,
      fresh.id,
    ]);
    expect(await c.trimExpired()).toBe(0);
    const expired = (await registry.getMetricsAsJSON()).find(
      (m) => m.name === 'cw_outbound_queue_expired_total',
    );
    expect(expired?.values).toEqual([{ labels: { queue: 'concordance-results' }, value: 1 }]);
  });

  it.each([
    ['a year behind', -365],
    ['a year ahead of', 365],
  ])(
    'trims by the clock it was given (%s the machine), not by the machine clock',
    async (_, days) => {
      const t0 = Date.now() + days * DAY_MS;
      let now = t0;
      const c = channel(newOutboundKey(), { now: () => now });
      const [first, second] = [makeEvent(), makeEvent()];
      await c.deliver(first);
      now = t0 + 6 * DAY_MS; // by this clock the first event is 6 days old: kept
      await c.deliver(second);
      const waiting = async () => (await c.queue.getJobs(['wait'], 0, -1, true)).map((j) => j.id);
      expect(await waiting()).toEqual([first.id, second.id]);
      now = t0 + 7 * DAY_MS + 1_000; // 7 days and a second: past waiting_age_s by this clock
      expect(await c.trimExpired()).toBe(1);
      expect(await waiting()).toEqual([second.id]);
    },
  );

  it('reports the consumer lag: waiting events and the age of the oldest', async () => {
    const key = newOutboundKey();
    const t0 = Date.parse('2026-11-20T08:00:00Z');
    let now = t0;
    const c = channel(key, { now: () => now });
    expect(await outboundLag(c.queue, t0)).toEqual({ waiting: 0, oldestWaitingSeconds: 0 });
    await c.deliver(makeEvent());
    now = t0 + 30_000;
    await c.deliver(makeEvent());
    expect(await outboundLag(c.queue, t0 + 90_000)).toEqual({
      waiting: 2,
      oldestWaitingSeconds: 90,
    });

    const registry = new Registry();
    const metrics = new OutboundQueueMetrics(registry);
    metrics.watch(c.queue);
    const text = await registry.metrics();
    expect(text).toContain('cw_outbound_queue_waiting{queue="concordance-results"} 2');
    expect(text).toMatch(
      /cw_outbound_queue_oldest_waiting_seconds\{queue="concordance-results"\} \d/,
    );
  });

  it('`outbound open` opens events from stdin or from the queue, with the old key during a rotation', async () => {
    const [oldKey, key] = [newOutboundKey(), newOutboundKey()];
    const events = [makeEvent({ patient_id: PLANTED }), makeEvent({ patient_id: 'MRN-2' })];
    await channel(oldKey).deliver(events[0] ?? makeEvent());
    await channel(key).deliver(events[1] ?? makeEvent());
    const jobs = await (channels[0]?.queue.getJobs(['wait'], 0, -1, true) ?? []);
    const env = {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: redis.prefix,
      OUTBOUND_KEY: key,
      OLD_OUTBOUND_KEY: oldKey,
    };

    const fromQueue = await openCli(env, ['--from-queue', '--also-key-env', 'OLD_OUTBOUND_KEY']);
    expect(fromQueue.code, fromQueue.stderr).toBe(0);
    expect(fromQueue.lines.map((l) => JSON.parse(l) as unknown)).toEqual(events);

    // One job as BullMQ shows it, on stdin; without the old key it does not open.
    const job = JSON.stringify(jobs[0]?.asJSON());
    const refused = await openCli(env, [], job);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('no OUTBOUND_KEY given opens its patient_id');
    const opened = await openCli(env, ['--also-key-env', 'OLD_OUTBOUND_KEY'], job);
    expect(opened.lines.map((l) => JSON.parse(l) as unknown)).toEqual([events[0]]);

    // Events one per line (as a consumer logged them).
    const ndjson = jobs.map((j) => JSON.stringify(j.data)).join('\n');
    const both = await openCli(env, ['--also-key-env', 'OLD_OUTBOUND_KEY'], ndjson);
    expect(both.lines.map((l) => JSON.parse(l) as unknown)).toEqual(events);
  });
});
