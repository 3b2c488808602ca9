import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookDeliveryStore } from '../../../src/delivery/webhook-delivery-store.ts';
import { purgePatientDeliveries } from '../../../src/delivery/purge-patient-deliveries.ts';
import {
  watchWebhookRetries,
  WEBHOOK_OLDEST_RETRY,
} from '../../../src/observability/webhook-retry-gauge.ts';
import { eventually } from '../../support/eventually.ts';
import { DeliveryFixture, makeEvent } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await fixture?.close();
  fixture = undefined;
});

/** Retries an hour apart: a failed delivery stays in its backoff for the whole test. */
const HOUR_BACKOFF = { first_delay_ms: 3_600_000, max_delay_ms: 3_600_000, jitter: 0 };

/** A receiver that answers `failure` while `down.value` is true, else 204. */
function switchable(failure = 500) {
  const down = { value: true };
  return { down, respond: () => (down.value ? failure : 204) };
}

/**
 * The gauge on the fixture's registry (the one its /metrics would serve), reading the fixture's
 * partition 0, on a clock the test sets: `clock.at` when set, else the machine's.
 */
function watchFixture(f: DeliveryFixture, timeoutMs?: number) {
  const clock: { at: number | undefined } = { at: undefined };
  const unwatch = watchWebhookRetries(
    f.registry,
    [{ partition: 0, oldestRetryAt: () => f.webhook.store.oldestRetryAt() }],
    { now: () => clock.at ?? Date.now(), ...(timeoutMs === undefined ? {} : { timeoutMs }) },
  );
  closers.push(async () => unwatch());
  return clock;
}

/** The gauge's series as the registry serves them, by partition. */
async function ages(f: DeliveryFixture): Promise<Record<string, number>> {
  const metric = (await f.registry.getMetricsAsJSON()).find((m) => m.name === WEBHOOK_OLDEST_RETRY);
  if (metric === undefined) throw new Error(`${WEBHOOK_OLDEST_RETRY} is not registered`);
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.partition), v.value]));
}

const age = async (f: DeliveryFixture) => (await ages(f))['0'];

/** Once the last retrying delivery ended: the gauge reads 0 and the store keeps no retry. */
async function expectNoRetryLeft(f: DeliveryFixture): Promise<void> {
  expect(
    await eventually(
      () => age(f),
      (v) => v === 0,
    ),
  ).toBe(0);
  expect(await f.webhook.store.oldestRetryAt()).toBeUndefined();
}

const retried = (f: DeliveryFixture, id: string) =>
  f.logs.waitFor((e) => e.event_id === id && e.outcome === 'retried');

async function firstAttemptOf(f: DeliveryFixture, id: string): Promise<number> {
  const first = (await f.webhook.store.state(id))?.firstAttemptAt;
  if (first === undefined) throw new Error(`${id} has no first attempt`);
  return first;
}

/** A TCP server that takes connections and never answers: a Redis that hangs. */
async function silentServer(): Promise<{ port: number }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port };
}

describe('cw_webhook_oldest_retry_seconds', () => {
  it('is 0, then the age of the failing delivery from its first attempt, then 0 once the receiver answers and it is delivered', async () => {
    const { down, respond } = switchable(500);
    const f = (fixture = await DeliveryFixture.start({ respond }));
    const clock = watchFixture(f);
    expect(await ages(f)).toEqual({ '0': 0 });

    // The first event of a key fails; a second of the same key waits behind it, never attempted.
    const [first, behind] = [makeEvent(), makeEvent()];
    await f.deliver(first, behind);
    await retried(f, first.id);
    expect(
      await eventually(
        () => age(f),
        (v) => v !== undefined && v > 0,
      ),
    ).toBeGreaterThan(0);

    // On the test's clock: exactly the time since the first attempt, whatever the retries since.
    const firstAttemptAt = await firstAttemptOf(f, first.id);
    clock.at = firstAttemptAt + 42_000;
    expect(await age(f)).toBe(42);
    clock.at = firstAttemptAt + 900_500;
    expect(await age(f)).toBe(900.5);
    expect(await f.webhook.store.oldestRetryAt()).toBe(firstAttemptAt);

    down.value = false;
    await f.untilOutcome(first.id, 'delivered');
    await f.untilOutcome(behind.id, 'delivered');
    await expectNoRetryLeft(f);
    expect(f.attemptsOf(first.id).map((a) => a.status)).toContain(500);
    expect(f.attemptsOf(behind.id).map((a) => a.status)).toEqual([204]);
  });

  it('reads the oldest of several retrying deliveries, and stays 0 for deliveries that succeed at once', async () => {
    let failing = new Set<string>();
    const f = (fixture = await DeliveryFixture.start({
      respond: (attempt) => (failing.has(attempt.webhookId) ? 503 : 204),
      delivery: { backoff: HOUR_BACKOFF },
    }));
    const clock = watchFixture(f);
    const fine = makeEvent({ ccsr_category: 'RSP009' });
    await f.deliver(fine);
    await f.untilOutcome(fine.id, 'delivered');
    expect(await age(f)).toBe(0);

    const [older, newer] = [makeEvent(), makeEvent({ ccsr_category: 'CIR007' })];
    failing = new Set([older.id, newer.id]);
    await f.deliver(older);
    await retried(f, older.id);
    await f.deliver(newer);
    await retried(f, newer.id);
    const olderAt = await firstAttemptOf(f, older.id);
    expect(await firstAttemptOf(f, newer.id)).toBeGreaterThanOrEqual(olderAt);
    clock.at = olderAt + 60_000;
    expect(await age(f)).toBe(60);
  });

  it('goes back to 0 when the failing delivery is dead-lettered, or its patient purged', async () => {
    let status = 500;
    const f = (fixture = await DeliveryFixture.start({
      respond: () => status,
      delivery: { backoff: HOUR_BACKOFF, probe_interval_ms: 0 },
    }));
    watchFixture(f);
    const dying = makeEvent({ patient_service_id: 'psid-dies' });
    const purged = makeEvent({ patient_service_id: 'psid-purged' });
    await f.deliver(dying, purged);
    await Promise.all([retried(f, dying.id), retried(f, purged.id)]);
    expect(await age(f)).toBeGreaterThan(0);

    await purgePatientDeliveries({ redis: f.redis, prefix: f.prefix, keys: f.keys }, 'psid-purged');
    expect(await f.webhook.store.oldestRetryAt()).toBe(await firstAttemptOf(f, dying.id));

    // The endpoint is gone (410): the next attempt, brought forward from its hour of backoff,
    // dead-letters it.
    status = 410;
    const job = await f.webhook.queue.getJob((await f.webhook.store.state(dying.id))?.job ?? '');
    await job?.promote();
    await f.untilOutcome(dying.id, 'dead_lettered');
    await expectNoRetryLeft(f);
  });

  it('leaves out a partition whose Redis does not answer in time, and reports the others', async () => {
    const f = (fixture = await DeliveryFixture.start({ respond: () => 204 }));
    const { port } = await silentServer();
    const hanging = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
    hanging.on('error', () => undefined);
    closers.unshift(async () => hanging.disconnect());
    const store = new WebhookDeliveryStore({ redis: hanging, prefix: f.prefix, keys: f.keys });
    watchFixture(f, 200);
    const unwatch = watchWebhookRetries(f.registry, [
      { partition: 1, oldestRetryAt: () => store.oldestRetryAt() },
    ]);
    expect(await ages(f)).toEqual({ '0': 0 });
    unwatch();
  });
});
