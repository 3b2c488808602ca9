import type { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { DeliveryFixture, makeEvent } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const concordance = (generatedAt: string, met = true) => ({
  generated_at: generatedAt,
  guidelines: [
    { id: 'ADA-2026-9.1', met, evidence: { job_id: `j-${generatedAt}`, level: 'A' } },
    { id: 'ADA-2026-6.5', met: true, evidence: { job_id: 'x', level: 'B' } },
  ],
  concordant: met,
});

/** The same content: keys in another order, ignored fields (at depth) different. */
const sameContent = (generatedAt: string) => ({
  concordant: true,
  guidelines: [
    { evidence: { level: 'A', job_id: 'other' }, met: true, id: 'ADA-2026-9.1' },
    { met: true, id: 'ADA-2026-6.5', evidence: { level: 'B', job_id: 'y' } },
  ],
  generated_at: generatedAt,
});

describe('change detection', () => {
  it('marks `changed` on every event and delivers all of them without only_changed', async () => {
    const f = (fixture = await DeliveryFixture.start({ delivery: { outbound_queue: true } }));
    const first = makeEvent({ concordance: concordance('2026-11-02T08:00:00Z') });
    const same = makeEvent({ concordance: sameContent('2026-11-02T09:00:00Z') });
    const swapped = makeEvent({
      concordance: { ...sameContent('x'), guidelines: [...sameContent('x').guidelines].reverse() },
    });
    const failed = makeEvent({
      type: 'concordance.failed',
      status: 'failed',
      concordance: null,
      error: { code: 'ERR_REMOTE_JOB_FAILED', message: 'the remote job ended failed' },
    });
    const failedAgain = makeEvent({
      ...failed,
      id: makeEvent().id,
      created_at: makeEvent().created_at,
    });
    const otherKey = makeEvent({ ccsr_category: 'CIR007', concordance: concordance('z') });
    const events = [first, same, swapped, failed, failedAgain, otherKey];
    await f.deliver(...events);
    await f.untilReceived(...events.map((e) => e.id));

    const changed = (e: ResultEvent) =>
      f.receiver.events.find((r) => r.webhookId === e.id)?.payload.changed;
    // First of a key: changed. Same content: not. Array order matters. Failure after success
    // counts; the same failure again does not. Another key starts afresh.
    expect(events.map(changed)).toEqual([true, false, true, true, false, true]);
    // The outbound queue gets the same flag (both channels are on).
    const outbound = f.routing.channels.find((c) => c.name === 'queue') as unknown as {
      queue: Queue<ResultEvent>;
    };
    const jobs = await outbound.queue.getJobs(['wait', 'completed', 'active', 'delayed']);
    expect(new Map(jobs.map((j) => [j.data.id, j.data.changed]))).toEqual(
      new Map(events.map((e) => [e.id, changed(e)])),
    );
    expect(await f.counter('cw_deliveries_total', { outcome: 'suppressed' })).toBe(0);
  });

  it('with only_changed, suppresses an unchanged result and passes a changed one', async () => {
    const f = (fixture = await DeliveryFixture.start({ delivery: { only_changed: true } }));
    const first = makeEvent({ concordance: concordance('2026-11-02T08:00:00Z') });
    const same = makeEvent({ concordance: sameContent('2026-11-02T09:00:00Z') });
    const different = makeEvent({ concordance: concordance('2026-11-02T10:00:00Z', false) });
    // `first` twice: a query job retried after a crash hands its event over again, and that must
    // not count as "unchanged" against itself.
    await f.deliver(first, first, same, different);
    await f.untilReceived(first.id, different.id);
    await f.untilOutcome(different.id, 'delivered');

    // Ordering holds per key, so `same` would have arrived before `different` had it been sent.
    expect(f.receiver.events.map((e) => e.webhookId)).toEqual([first.id, different.id]);
    expect(f.receiver.events.map((e) => e.payload.changed)).toEqual([true, true]);
    // It never entered the webhook's queue at all.
    expect(await f.webhook.store.state(same.id)).toBeUndefined();
    expect(
      await f.counter('cw_deliveries_total', { channel: 'webhook', outcome: 'suppressed' }),
    ).toBe(1);
    await f.logs.waitFor((e) => e.event_id === same.id && e.outcome === 'suppressed');
  });
});
