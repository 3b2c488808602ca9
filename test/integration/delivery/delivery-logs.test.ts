import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryFixture, makeEvent } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const PATIENT_ID = 'MRN-PLANTED-7731';
const PAYLOAD_MARKER = 'payload-marker-guideline-5521';

describe('delivery logs', () => {
  it('name the event, key, attempt and status, and never the patient id, the secret or the payload', async () => {
    const f = (fixture = await DeliveryFixture.start({
      // Two failures for every event, then: 410 for the CIR007 one, 200 for the others.
      respond: (a) => (a.attemptOfId <= 2 ? 503 : a.webhookId === gone.id ? 410 : 200),
      delivery: { only_changed: true },
    }));
    const planted = {
      patient_id: PATIENT_ID,
      concordance: { guidelines: [{ id: PAYLOAD_MARKER, met: true }] },
    };
    const delivered = makeEvent(planted);
    const unchanged = makeEvent(planted);
    const gone = makeEvent({ ...planted, ccsr_category: 'CIR007' });
    await f.deliver(delivered, unchanged, gone);
    await f.untilOutcome(delivered.id, 'delivered');
    await f.untilOutcome(gone.id, 'dead_lettered');
    // The patient id and the payload did reach the webhook.
    expect(f.receiver.events[0]?.payload).toMatchObject(planted);

    const lines = f.logs.lines;
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    // One line per attempt outcome, each naming the event, its key, the attempt and the status.
    const attempts = entries.filter((e) =>
      ['retried', 'delivered', 'dead_lettered'].includes(String(e.outcome)),
    );
    expect(attempts.map((e) => [e.event_id, e.attempt, e.status, e.outcome])).toEqual(
      expect.arrayContaining([
        [delivered.id, 1, 503, 'retried'],
        [delivered.id, 2, 503, 'retried'],
        [delivered.id, 3, 200, 'delivered'],
        [gone.id, 1, 503, 'retried'],
        [gone.id, 2, 503, 'retried'],
        [gone.id, 3, 410, 'dead_lettered'],
      ]),
    );
    expect(attempts).toHaveLength(6);
    for (const e of attempts) {
      expect(e.query_key).toBe(
        `${delivered.patient_service_id}/${e.event_id === gone.id ? 'CIR007' : 'END002'}`,
      );
    }
    expect(entries.some((e) => e.event_id === unchanged.id && e.outcome === 'suppressed')).toBe(
      true,
    );

    const secretBody = f.secret.slice('whsec_'.length);
    for (const forbidden of [PATIENT_ID, PAYLOAD_MARKER, secretBody, 'concordance.completed']) {
      expect(lines.filter((line) => line.includes(forbidden))).toEqual([]);
    }
  });
});
