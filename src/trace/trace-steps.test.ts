import { describe, expect, it } from 'vitest';
import type { ReceiptTrace } from './message-trace-reader.ts';
import { traceSteps } from './trace-steps.ts';

const T0 = Date.parse('2026-11-20T08:00:00.000Z');

const base: ReceiptTrace = {
  at: T0,
  feed: 'hl7v2-mllp',
  sender: { application: 'EPIC', facility: 'MAIN' },
  type: 'ADT^A08',
  answer: { code: 'AA', error: null },
  state: 'queued',
  psid: 'psid-1',
  version: 3,
  trace_id: null,
  partition: 0,
  has_raw: false,
  queries: [],
};

describe('traceSteps', () => {
  it('orders a full query: answer, patient, query, submission, poll, result, delivery', () => {
    const steps = traceSteps({
      ...base,
      queries: [
        {
          category: 'END002',
          seq: 1,
          coalesced: false,
          trace: {
            opened_at: T0,
            feed: 'hl7v2-mllp',
            messages: 1,
            queued_at: T0 + 1_000,
            job_id: 'job-1',
            attempts: 2,
            claimed_at: T0 + 2_000,
            last_error: 'ERR_SERVICE_UNAVAILABLE',
            submitted_at: T0 + 3_000,
            remote_job_id: 'remote-1',
            polls: 3,
            last_poll_at: T0 + 9_000,
            ended_at: T0 + 10_000,
            outcome: 'completed',
            event_id: 'EV-1',
          },
          delivery: {
            outbound_at: T0 + 11_000,
            webhook_attempts: 1,
            webhook_last_at: T0 + 12_000,
            webhook_last_answer: '204',
            webhook_state: 'delivered',
            webhook_ended_at: T0 + 12_000,
          },
        },
      ],
    });
    expect(steps.map((s) => [s.kind, s.at, s.code, s.query ?? null])).toEqual([
      ['answer', T0, 'AA', null],
      ['patient', T0, null, null],
      ['query', T0, 'opened', 'END002:1'],
      ['submission', T0 + 3_000, 'submitted', 'END002:1'],
      ['poll', T0 + 9_000, null, 'END002:1'],
      ['result', T0 + 10_000, 'completed', 'END002:1'],
      ['delivery', T0 + 12_000, 'delivered', 'END002:1'],
    ]);
    expect(steps[0]?.text).toBe('hl7v2-mllp ADT^A08, from EPIC/MAIN, answered AA, queued');
    expect(steps[1]?.text).toBe('patient psid-1, record version 3');
    expect(steps[2]?.text).toContain('queued 2026-11-20T08:00:01.000Z');
    expect(steps[3]?.text).toContain('last error ERR_SERVICE_UNAVAILABLE');
    expect(steps[6]?.text).toContain('outbound queue 2026-11-20T08:00:11.000Z');
  });

  it('a filtered message is its answer alone; a query without steps kept says so; a query stops where it went', () => {
    expect(
      traceSteps({
        ...base,
        psid: null,
        version: null,
        state: 'filtered',
        answer: { code: 'AA', error: null },
      }).map((s) => [s.kind, s.code, s.text]),
    ).toEqual([['answer', 'AA', 'hl7v2-mllp ADT^A08, from EPIC/MAIN, answered AA, filtered']]);

    const steps = traceSteps({
      ...base,
      queries: [
        { category: 'END002', seq: 1, coalesced: true, trace: null, delivery: null },
        {
          category: 'END003',
          seq: 4,
          coalesced: false,
          trace: { opened_at: T0, ended_at: T0 + 5, outcome: 'failed', error_code: 'ERR_X' },
          delivery: null,
        },
      ],
    });
    expect(steps.slice(2).map((s) => [s.kind, s.code, s.query])).toEqual([
      ['query', 'joined', 'END002:1'],
      ['query', 'opened', 'END003:4'],
      ['result', 'ERR_X', 'END003:4'],
    ]);
    expect(steps[2]?.at).toBeNull();
    expect(steps[2]?.text).toContain('no steps kept');
  });
});
