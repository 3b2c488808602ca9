import { describe, expect, it } from 'vitest';
import type { ReceivedAttempt, ReceivedEvent } from '../../tools/webhook-receiver.ts';
import { computeFigures, type ServiceRequest } from './figures.ts';
import type { SentUpdate } from './sender.ts';
import { jsonUpdate } from './updates.ts';

const T0 = 1_000_000;

function idOf(updates: readonly SentUpdate[], index: number): string {
  const update = updates[index];
  if (!update) throw new Error(`no update ${index}`);
  return update.update.eventId;
}

function sent(patient: string, seq: number, acked = true): SentUpdate {
  return {
    update: jsonUpdate('r', patient, 0, seq),
    attempts: acked ? 1 : 3,
    firstAttemptAt: T0 + seq,
    ...(acked ? { ackedAt: T0 + 100 + seq } : {}),
    answers: acked ? { '202': 1 } : { '503': 3 },
  };
}

function event(id: string, patient: string, eventIds: string[], at: number): ReceivedEvent {
  return {
    webhookId: id,
    receivedAt: at,
    payload: {
      id,
      status: 'completed',
      patient_id: patient,
      ccsr_category: 'END002',
      triggered_by: { event_ids: eventIds },
    },
  };
}

function attempt(webhookId: string, status: number, verified = true): ReceivedAttempt {
  return {
    webhookId,
    headers: {},
    timestamp: '',
    signature: '',
    rawBody: '',
    verified,
    attemptOfId: 1,
    status,
  };
}

const figures = (input: Partial<Parameters<typeof computeFigures>[0]>) =>
  computeFigures({
    sent: [],
    events: [],
    attempts: [],
    serviceRequests: [],
    faults: [],
    startedAt: T0,
    endedAt: T0 + 10_000,
    ...input,
  });

describe('computeFigures', () => {
  it('an acknowledged update is reflected by a result naming it or a later update of the patient', () => {
    const updates = [
      sent('P1', 0),
      sent('P1', 1),
      sent('P1', 2),
      sent('P2', 0),
      sent('P3', 0, false),
    ];
    const f = figures({
      sent: updates,
      events: [event('e1', 'P1', [idOf(updates, 1)], T0 + 500)],
    });
    // P1 seq 0 and 1 are covered by the result of seq 1; P1 seq 2 and P2 seq 0 are not;
    // P3 was never acknowledged, so it is unacknowledged, not lost.
    expect(f.lost).toBe(2);
    expect(f.lost_examples).toEqual([idOf(updates, 2), idOf(updates, 3)]);
    expect(f.lost_by_feed).toEqual({ json: 2, hl7: 0, fhir: 0 });
    expect(f.acknowledged).toBe(4);
    expect(f.unacknowledged).toBe(1);
    expect(f.answers).toEqual({ '202': 4, '503': 3 });
    // acks at +100 and +101; the result naming seq 1 arrived at +500.
    expect(f.reflected_after_ms).toEqual({ p50: 399, p99: 400, max: 400 });
  });

  it('a result of another category or patient reflects nothing', () => {
    const updates = [sent('P1', 0)];
    const other = event('e1', 'P2', [idOf(updates, 0)], T0);
    const wrongCategory = event('e2', 'P1', [idOf(updates, 0)], T0);
    (wrongCategory.payload as { ccsr_category: string }).ccsr_category = 'CIR007';
    expect(figures({ sent: updates, events: [other, wrongCategory] }).lost).toBe(1);
  });

  it('counts accepted submissions with a body seen before as duplicates', () => {
    const post = (body: unknown, status: number | null): ServiceRequest => ({
      method: 'POST',
      path: '/v1/concordance',
      status,
      body,
    });
    const f = figures({
      serviceRequests: [
        post({ a: 1 }, 202),
        post({ a: 1 }, 202),
        post({ a: 2 }, 202),
        post({ a: 2 }, 503),
        post({ a: 3 }, null),
        { method: 'GET', path: '/v1/concordance/j1', status: 200, body: null },
      ],
    });
    expect(f.submissions).toBe(3);
    expect(f.duplicate_submissions).toBe(1);
  });

  it('tells duplicate deliveries from retries of failed ones, and counts bad signatures', () => {
    const f = figures({
      events: [event('e1', 'P1', [], T0), event('e1', 'P1', [], T0 + 1), event('e2', 'P1', [], T0)],
      attempts: [
        attempt('e1', 204),
        attempt('e1', 204),
        attempt('e2', 503),
        attempt('e2', 503),
        attempt('e2', 204),
        attempt('e3', 401, false),
      ],
    });
    expect(f.delivered).toBe(2);
    expect(f.duplicate_deliveries).toBe(1);
    expect(f.failed_delivery_attempts).toBe(2);
    expect(f.unverified_deliveries).toBe(1);
  });

  it('time to recover is the worst, over the faults, of the first success after each ends', () => {
    const updates = [sent('P1', 0), sent('P1', 50), sent('P1', 400)];
    const f = figures({
      sent: updates,
      events: [event('e1', 'P1', [], T0 + 300), event('e2', 'P1', [], T0 + 900)],
      faults: [
        { what: 'a', start: T0, end: T0 + 120 },
        { what: 'b', start: T0 + 200, end: T0 + 250 },
      ],
    });
    // acks at +100, +150, +500; events at +300, +900.
    expect(f.time_to_recover_ms).toEqual({ ingest: 250, delivery: 180, delivery_backlog: null });
    expect(f.faults).toEqual([
      { what: 'a', start_ms: 0, duration_ms: 120 },
      { what: 'b', start_ms: 200, duration_ms: 50 },
    ]);
  });

  it('no success after a fault gives null', () => {
    const f = figures({ faults: [{ what: 'a', start: T0, end: T0 + 1 }] });
    expect(f.time_to_recover_ms).toEqual({ ingest: null, delivery: null, delivery_backlog: null });
  });

  it('the delivery backlog ends with the last delivery of an event the receiver had refused', () => {
    const f = figures({
      events: [event('e1', 'P1', [], T0 + 400), event('e2', 'P1', [], T0 + 900)],
      attempts: [attempt('e1', 503), attempt('e1', 204), attempt('e2', 204)],
      faults: [{ what: 'receiver down', start: T0, end: T0 + 100 }],
    });
    expect(f.time_to_recover_ms.delivery_backlog).toBe(300);
  });
});
