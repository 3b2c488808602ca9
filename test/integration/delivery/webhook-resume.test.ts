import { afterEach, describe, expect, it } from 'vitest';
import { purgePatientDeliveries } from '../../../src/delivery/purge-patient-deliveries.ts';
import { DeliveryFixture, makeEvent } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/** Retries an hour apart: only a resume can bring a failed delivery back within the test. */
const HOUR_BACKOFF = { first_delay_ms: 3_600_000, max_delay_ms: 3_600_000, jitter: 0 };

/** A receiver that answers 503 while `down.value` is true. */
function switchable() {
  const down = { value: true };
  return { down, respond: () => (down.value ? 503 : 204) };
}

const retried = (f: DeliveryFixture, id: string) =>
  f.logs.waitFor((e) => e.event_id === id && e.outcome === 'retried');

describe('webhook recovery after an outage', () => {
  it('a probe finds the endpoint back and every waiting delivery goes at once, in order per key', async () => {
    const { down, respond } = switchable();
    const f = (fixture = await DeliveryFixture.start({
      respond,
      delivery: { backoff: HOUR_BACKOFF, probe_interval_ms: 50 },
    }));
    const [a1, a2, b1] = [makeEvent(), makeEvent(), makeEvent({ ccsr_category: 'CIR007' })];
    await f.deliver(a1, a2, b1);
    // Both heads have failed and wait out an hour's backoff; a2 waits behind a1.
    await Promise.all([retried(f, a1.id), retried(f, b1.id)]);
    expect(f.receiver.events).toHaveLength(0);

    down.value = false;
    await f.untilReceived(a1.id, a2.id, b1.id);
    await f.logs.waitFor(
      (e) => e.msg === 'webhook endpoint answers again: waiting deliveries resumed',
    );

    const acknowledged = f.receiver.events.map((e) => e.webhookId);
    expect(acknowledged.filter((id) => id === a1.id || id === a2.id)).toEqual([a1.id, a2.id]);
    expect([...acknowledged].sort()).toEqual([a1.id, a2.id, b1.id].sort());
    // a2 was never tried before a1 was acknowledged.
    const firstA2 = f.receiver.attempts.findIndex((a) => a.webhookId === a2.id);
    const ackA1 = f.receiver.attempts.findIndex((a) => a.webhookId === a1.id && a.status < 300);
    expect(firstA2).toBeGreaterThan(ackA1);
  });

  it('without a probe, the first success (a new event) resumes the deliveries in backoff', async () => {
    const { down, respond } = switchable();
    const f = (fixture = await DeliveryFixture.start({
      respond,
      delivery: { backoff: HOUR_BACKOFF, probe_interval_ms: 0 },
    }));
    const waiting = makeEvent();
    await f.deliver(waiting);
    await retried(f, waiting.id);

    down.value = false;
    const fresh = makeEvent({ ccsr_category: 'RSP009' });
    await f.deliver(fresh);
    await f.untilReceived(fresh.id, waiting.id);
    expect(f.attemptsOf(waiting.id).map((a) => a.status)).toEqual([503, 204]);
  });

  it('keeps waiting events sealed at rest, and purges a patient’s waiting events', async () => {
    const { respond } = switchable();
    const f = (fixture = await DeliveryFixture.start({
      respond,
      delivery: { backoff: HOUR_BACKOFF, probe_interval_ms: 0 },
    }));
    const planted = 'MRN-PLANTED-WEBHOOK-77';
    const mine = [
      makeEvent({ patient_id: planted, patient_service_id: 'psid-purge' }),
      makeEvent({ patient_id: planted, patient_service_id: 'psid-purge', ccsr_category: 'CIR007' }),
    ];
    const theirs = makeEvent({ patient_service_id: 'psid-keep' });
    await f.deliver(...mine, theirs);
    await Promise.all([...mine, theirs].map((e) => retried(f, e.id)));

    const raw = await f.redis.hget(`${f.prefix}:webhook:event:${mine[0]?.id ?? ''}`, 'event');
    expect(raw).not.toBeNull();
    expect(raw).not.toContain(planted);
    expect(JSON.parse(raw ?? '{}')).toMatchObject({ patient_id_sealed: expect.any(String) });
    // Opened just before sending: the receiver gets the plain id (it is inside the hospital).
    expect(f.receiver.attempts.find((a) => a.webhookId === mine[0]?.id)?.rawBody).toContain(
      `"patient_id":"${planted}"`,
    );

    const purged = await purgePatientDeliveries(
      { redis: f.redis, prefix: f.prefix, keys: f.keys },
      'psid-purge',
    );
    expect(purged).toEqual({ pending: 2, deadLetters: 0, lastResults: 2 });
    for (const e of mine) expect(await f.webhook.store.state(e.id)).toBeUndefined();
    expect(await f.webhook.store.state(theirs.id)).toMatchObject({ state: 'pending' });
    const lines = [];
    for await (const key of f.webhook.store.keys()) lines.push(key);
    expect(lines).toEqual(['psid-keep/END002']);
  });
});
