import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { QueryOutcome } from '../interface/result-event.ts';
import {
  decideBeforePoll,
  decideBeforeSubmit,
  decidePoll,
  decideStalled,
  decideSubmitFailure,
  DEFAULT_RATE_LIMIT_MS,
  supersededDecision,
  type ClaimFacts,
  type EndDecision,
  type EndFailure,
  type HoldDecision,
  type LifecycleRules,
  type PollAnswer,
  type PollFacts,
  type SubmitFailure,
} from './query-lifecycle.ts';
import { RESULT_ERROR_CODES, type ResultErrorCode } from './result-error-codes.ts';

const NOW = 1_800_000_000_000;

const RULES: LifecycleRules = {
  deadlineMs: 600_000,
  resubmitLost: 2,
  deliverSuperseded: false,
  maxStalledCount: 1,
  authPauseMs: 60_000,
  submitAttempts: 3,
};

const claim = (facts: Partial<ClaimFacts> = {}): ClaimFacts => ({
  optedOut: false,
  superseded: false,
  hasRecord: true,
  ...facts,
});

const pollFacts = (facts: Partial<PollFacts> = {}): PollFacts => ({
  submittedAt: NOW - 10_000,
  polls: 3,
  resubmits: 0,
  superseded: false,
  leases: 1,
  ...facts,
});

/** The end decision expected: `outcome`, counted as such, for `failure` if any. */
const ending = (
  outcome: QueryOutcome,
  failure?: EndFailure,
  more: Partial<EndDecision> = {},
): EndDecision => ({
  kind: 'end',
  outcome,
  countAs: outcome,
  ...(failure === undefined ? {} : { failure }),
  ...more,
});

const SUPERSEDED_END = ending(
  'failed',
  { code: 'ERR_SUPERSEDED', message: 'a newer query of this key was submitted' },
  { countAs: 'superseded' },
);
/** The hold expected for `reason`, `ms` from now. */
const held = (reason: HoldDecision['reason'], ms: number): HoldDecision => ({
  kind: 'hold',
  reason,
  ms,
  until: NOW + ms,
});
const FORGET = { kind: 'forget', countAs: 'superseded' };
const OPTED_OUT = ending('rejected', {
  code: 'ERR_PATIENT_OPTED_OUT',
  message: 'the patient opted out',
});
const RECORD_MISSING = ending('rejected', {
  code: 'ERR_RECORD_MISSING',
  message: 'no record is stored for this patient',
});

describe('supersededDecision', () => {
  it('ends with an ERR_SUPERSEDED event only for a submitted query with deliver_superseded', () => {
    expect(supersededDecision({ deliverSuperseded: true }, true)).toEqual(SUPERSEDED_END);
    expect(supersededDecision({ deliverSuperseded: true }, false)).toEqual(FORGET);
    expect(supersededDecision({ deliverSuperseded: false }, true)).toEqual(FORGET);
    expect(supersededDecision({ deliverSuperseded: false }, false)).toEqual(FORGET);
  });
});

describe('decideBeforeSubmit', () => {
  it('lets a claimed query with a record, neither opted out nor superseded, go on', () => {
    expect(decideBeforeSubmit(claim(), RULES)).toBeUndefined();
  });

  it('rejects an opted-out patient with ERR_PATIENT_OPTED_OUT', () => {
    expect(decideBeforeSubmit(claim({ optedOut: true }), RULES)).toEqual(OPTED_OUT);
  });

  it('forgets a superseded query without an event, even with deliver_superseded (never sent)', () => {
    expect(decideBeforeSubmit(claim({ superseded: true }), RULES)).toEqual(FORGET);
    const deliver = { deliverSuperseded: true };
    expect(decideBeforeSubmit(claim({ superseded: true }), deliver)).toEqual(FORGET);
  });

  it('rejects a query without a stored record with ERR_RECORD_MISSING', () => {
    expect(decideBeforeSubmit(claim({ hasRecord: false }), RULES)).toEqual(RECORD_MISSING);
  });

  it.each([
    ['opted out wins over superseded', { optedOut: true, superseded: true }, OPTED_OUT],
    ['opted out wins over no record', { optedOut: true, hasRecord: false }, OPTED_OUT],
    ['opted out wins over both', { optedOut: true, superseded: true, hasRecord: false }, OPTED_OUT],
    ['superseded wins over no record', { superseded: true, hasRecord: false }, FORGET],
  ])('%s', (_, facts, expected) => {
    expect(decideBeforeSubmit(claim(facts), RULES)).toEqual(expected);
  });
});

describe('decideSubmitFailure', () => {
  const decide = (failure: SubmitFailure, attempt = 1, rules = RULES) =>
    decideSubmitFailure(failure, attempt, rules, NOW);

  it('waits for the birth date when the record has none', () => {
    expect(decide({ kind: 'birth_date_missing' }, RULES.submitAttempts)).toEqual({
      kind: 'wait_demographics',
    });
  });

  it('rejects a refused record with its code, at the first attempt, without items', () => {
    const refused = { code: 'ERR_IDENTIFIER_LEAK', message: 'the local id leaked' } as const;
    expect(decide({ kind: 'refused', ...refused })).toEqual(ending('rejected', refused));
  });

  it("rejects a 422 with the service's items", () => {
    const items = [{ loc: ['body', 'assembled_patient', 'age'], msg: 'required', type: 'missing' }];
    const failure: SubmitFailure = {
      kind: 'refused',
      code: 'ERR_SERVICE_VALIDATION',
      message: 'invalid body',
      items,
    };
    expect(decide(failure)).toEqual(
      ending('rejected', { code: 'ERR_SERVICE_VALIDATION', message: 'invalid body', items }),
    );
  });

  it('holds the queries until the Retry-After of a 429 has passed', () => {
    expect(decide({ kind: 'rate_limited', retryAfterMs: 12_000 })).toEqual(
      held('rate_limited', 12_000),
    );
    expect(decide({ kind: 'rate_limited', retryAfterMs: 0 })).toMatchObject({ until: NOW });
  });

  it('holds the queries 5 s after a 429 without Retry-After, or rules.rateLimitMs', () => {
    expect(DEFAULT_RATE_LIMIT_MS).toBe(5_000);
    expect(decide({ kind: 'rate_limited' })).toEqual(held('rate_limited', 5_000));
    expect(decide({ kind: 'rate_limited' }, 1, { ...RULES, rateLimitMs: 750 })).toMatchObject({
      until: NOW + 750,
    });
    const both = decide({ kind: 'rate_limited', retryAfterMs: 9_000 }, 1, {
      ...RULES,
      rateLimitMs: 750,
    });
    expect(both).toMatchObject({ until: NOW + 9_000 });
  });

  it('holds the queries auth_pause_ms after a refused API key, whatever the attempt', () => {
    const hold = held('auth_refused', RULES.authPauseMs);
    expect(decide({ kind: 'auth_refused' })).toEqual(hold);
    expect(decide({ kind: 'auth_refused' }, RULES.submitAttempts + 1)).toEqual(hold);
  });

  it('waits for the birth date at any attempt, the first included', () => {
    expect(decide({ kind: 'birth_date_missing' }, 1)).toEqual({ kind: 'wait_demographics' });
    expect(decide({ kind: 'birth_date_missing' }, RULES.submitAttempts + 5)).toEqual({
      kind: 'wait_demographics',
    });
  });

  it.each(['ERR_RECORD_NOT_ASSEMBLABLE', 'ERR_IDENTIFIER_LEAK', 'ERR_SERVICE_VALIDATION'] as const)(
    'rejects a record refused with %s at once, whatever the attempt',
    (code) => {
      const failure: SubmitFailure = { kind: 'refused', code, message: 'refused' };
      const rejected = ending('rejected', { code, message: 'refused' });
      expect(decide(failure, 1)).toEqual(rejected);
      expect(decide(failure, RULES.submitAttempts)).toEqual(rejected);
      expect(decide(failure, RULES.submitAttempts + 1)).toEqual(rejected);
    },
  );

  it('holds after a 429 even at or past the last attempt: a hold never ends the query', () => {
    expect(decide({ kind: 'rate_limited' }, RULES.submitAttempts)).toEqual(
      held('rate_limited', DEFAULT_RATE_LIMIT_MS),
    );
    expect(decide({ kind: 'rate_limited', retryAfterMs: 3_000 }, RULES.submitAttempts + 1)).toEqual(
      held('rate_limited', 3_000),
    );
  });

  it('holds a refused key for auth_pause_ms, never for rate_limit_ms', () => {
    expect(decide({ kind: 'auth_refused' }, 1, { ...RULES, rateLimitMs: 750 })).toEqual(
      held('auth_refused', RULES.authPauseMs),
    );
  });

  it('fails a permanent failure at the first attempt, and at the last one without a count', () => {
    const failure: SubmitFailure = {
      kind: 'permanent',
      code: 'ERR_SERVICE_BAD_RESPONSE',
      message: 'no job id in the answer',
    };
    const failed = ending('failed', {
      code: 'ERR_SERVICE_BAD_RESPONSE',
      message: 'no job id in the answer',
    });
    expect(decide(failure, 1)).toEqual(failed);
    expect(decide(failure, RULES.submitAttempts)).toEqual(failed);
  });

  it('ends a transient failure with its own code (a timeout stays ERR_SERVICE_TIMEOUT)', () => {
    const failure: SubmitFailure = {
      kind: 'transient',
      code: 'ERR_SERVICE_TIMEOUT',
      message: 'no answer in time',
    };
    expect(decide(failure, RULES.submitAttempts - 1)).toEqual({ kind: 'retry' });
    expect(decide(failure, RULES.submitAttempts)).toEqual(
      ending('failed', {
        code: 'ERR_SERVICE_TIMEOUT',
        message: 'no answer in time (after 3 attempts)',
      }),
    );
  });

  it('fails a permanent failure at once, with its code and message', () => {
    const failure: SubmitFailure = {
      kind: 'permanent',
      code: 'ERR_SERVICE_REQUEST',
      message: 'POST /v1/concordance answered 413',
    };
    expect(decide(failure)).toEqual(
      ending('failed', {
        code: 'ERR_SERVICE_REQUEST',
        message: 'POST /v1/concordance answered 413',
      }),
    );
  });

  it('retries a transient failure until the last attempt, then fails saying how many', () => {
    const failure: SubmitFailure = {
      kind: 'transient',
      code: 'ERR_SERVICE_UNAVAILABLE',
      message: 'service unavailable',
    };
    expect(decide(failure, 1)).toEqual({ kind: 'retry' });
    expect(decide(failure, 2)).toEqual({ kind: 'retry' });
    const failed = ending('failed', {
      code: 'ERR_SERVICE_UNAVAILABLE',
      message: 'service unavailable (after 3 attempts)',
    });
    expect(decide(failure, 3)).toEqual(failed);
    expect(decide(failure, 4)).toEqual(failed);
    expect(decide(failure, 1, { ...RULES, submitAttempts: 1 })).toMatchObject({
      kind: 'end',
      failure: { message: 'service unavailable (after 1 attempts)' },
    });
  });
});

describe('decideStalled', () => {
  /** The stalled ending for `max` = `queries.max_stalled_count`. */
  const stalledEnd = (max: number) =>
    ending('failed', {
      code: 'ERR_QUERY_STALLED',
      message: `the query's worker stopped more than ${max} times while it ran`,
    });

  // `leases` counts this lease too: leases - 1 leases were lost (their workers died).
  it('lets a query go on below max_stalled_count lost leases', () => {
    expect(decideStalled(1, { maxStalledCount: 2 })).toBeUndefined();
    expect(decideStalled(2, { maxStalledCount: 2 })).toBeUndefined();
  });

  it('lets a query go on at exactly max_stalled_count lost leases (max + 1 leases)', () => {
    expect(decideStalled(3, { maxStalledCount: 2 })).toBeUndefined();
    expect(decideStalled(11, { maxStalledCount: 10 })).toBeUndefined();
  });

  it('ends ERR_QUERY_STALLED above max_stalled_count lost leases, naming the count', () => {
    expect(decideStalled(4, { maxStalledCount: 2 })).toEqual(stalledEnd(2));
    expect(decideStalled(12, { maxStalledCount: 10 })).toEqual(stalledEnd(10));
    expect(decideStalled(1_000, { maxStalledCount: 2 })).toEqual(stalledEnd(2));
  });

  it('with max_stalled_count 0: the first lease goes on, the first lost lease ends it', () => {
    expect(decideStalled(1, { maxStalledCount: 0 })).toBeUndefined();
    expect(decideStalled(2, { maxStalledCount: 0 })).toEqual(stalledEnd(0));
    expect(decideStalled(3, { maxStalledCount: 0 })).toEqual(stalledEnd(0));
  });

  it('is what decideBeforePoll decides for a query that is not superseded', () => {
    for (let leases = 1; leases <= 5; leases++) {
      for (const maxStalledCount of [0, 1, 3]) {
        const rules = { ...RULES, maxStalledCount };
        expect(decideBeforePoll(pollFacts({ leases }), rules)).toEqual(
          decideStalled(leases, rules),
        );
      }
    }
  });

  it('ends by the result-code contract (ERR_QUERY_STALLED is a failure)', () => {
    expect(RESULT_ERROR_CODES.ERR_QUERY_STALLED).toBe('failed');
    expect(decideStalled(3, { maxStalledCount: 0 })?.countAs).toBe('failed');
  });
});

describe('decideBeforePoll', () => {
  const stalled = ending('failed', {
    code: 'ERR_QUERY_STALLED',
    message: "the query's worker stopped more than 1 times while it ran",
  });

  it('polls a query that is neither superseded nor stalled', () => {
    expect(decideBeforePoll(pollFacts(), RULES)).toBeUndefined();
  });

  it('ends a superseded query with ERR_SUPERSEDED (deliver_superseded on) or forgets it', () => {
    const facts = pollFacts({ superseded: true });
    expect(decideBeforePoll(facts, { ...RULES, deliverSuperseded: true })).toEqual(SUPERSEDED_END);
    expect(decideBeforePoll(facts, RULES)).toEqual(FORGET);
  });

  it('fails with ERR_QUERY_STALLED past max_stalled_count + 1 leases, polls at the bound', () => {
    expect(decideBeforePoll(pollFacts({ leases: 2 }), RULES)).toBeUndefined();
    expect(decideBeforePoll(pollFacts({ leases: 3 }), RULES)).toEqual(stalled);
    const none = { ...RULES, maxStalledCount: 0 };
    expect(decideBeforePoll(pollFacts({ leases: 1 }), none)).toBeUndefined();
    expect(decideBeforePoll(pollFacts({ leases: 2 }), none)).toMatchObject({
      failure: { code: 'ERR_QUERY_STALLED' },
    });
  });

  it('ends a superseded query as superseded even when it also stalled', () => {
    const facts = pollFacts({ superseded: true, leases: 10 });
    expect(decideBeforePoll(facts, RULES)).toEqual(FORGET);
    expect(decideBeforePoll(facts, { ...RULES, deliverSuperseded: true })).toEqual(SUPERSEDED_END);
  });
});

describe('decidePoll', () => {
  const delays: number[] = [];
  const schedule = (polls: number) => {
    delays.push(polls);
    return 4_000;
  };
  const decide = (answer: PollAnswer, facts: Partial<PollFacts> = {}, now = NOW) =>
    decidePoll(pollFacts(facts), answer, RULES, now, schedule);
  const concordance = { concordant: true, score: 0.8 };

  it('completes a successful job with its concordance (null included)', () => {
    expect(decide({ kind: 'success', concordance })).toEqual(
      ending('completed', undefined, { concordance }),
    );
    expect(decide({ kind: 'success', concordance: null })).toEqual(
      ending('completed', undefined, { concordance: null }),
    );
  });

  it('fails a job that ended in a failure state, naming it and keeping its concordance', () => {
    expect(decide({ kind: 'failure', status: 'cancelled', concordance })).toEqual(
      ending(
        'failed',
        { code: 'ERR_REMOTE_JOB_FAILED', message: 'the remote job ended cancelled' },
        { concordance },
      ),
    );
  });

  it('resubmits a lost job while resubmissions remain, then ends it lost', () => {
    expect(decide({ kind: 'lost' }, { resubmits: 0 })).toEqual({ kind: 'resubmit' });
    expect(decide({ kind: 'lost' }, { resubmits: 1 })).toEqual({ kind: 'resubmit' });
    const lost = ending('lost', {
      code: 'ERR_REMOTE_JOB_LOST',
      message: 'the service no longer knows the job',
    });
    expect(decide({ kind: 'lost' }, { resubmits: 2 })).toEqual(lost);
    const never = { ...RULES, resubmitLost: 0 };
    expect(decidePoll(pollFacts(), { kind: 'lost' }, never, NOW, schedule)).toEqual(lost);
  });

  it('holds the polls on a 429 (Retry-After, else the default) and a refused key', () => {
    expect(decide({ kind: 'rate_limited', retryAfterMs: 20_000 })).toEqual(
      held('rate_limited', 20_000),
    );
    expect(decide({ kind: 'rate_limited' })).toEqual(held('rate_limited', DEFAULT_RATE_LIMIT_MS));
    const limited = { ...RULES, rateLimitMs: 1_500 };
    expect(decidePoll(pollFacts(), { kind: 'rate_limited' }, limited, NOW, schedule)).toMatchObject(
      { until: NOW + 1_500 },
    );
    expect(decide({ kind: 'auth_refused' })).toEqual(held('auth_refused', RULES.authPauseMs));
  });

  it("polls a pending job again after the schedule's delay for the next poll", () => {
    delays.length = 0;
    expect(decide({ kind: 'pending' }, { polls: 3 })).toEqual({
      kind: 'poll_again',
      at: NOW + 4_000,
      polls: 4,
    });
    expect(delays).toEqual([4]);
  });

  it("lets a pending job's Retry-After win over the schedule", () => {
    delays.length = 0;
    expect(decide({ kind: 'pending', retryAfterMs: 15_000 })).toEqual({
      kind: 'poll_again',
      at: NOW + 15_000,
      polls: 4,
    });
    expect(delays).toEqual([]);
  });

  it('moves the poll at least 1 ms forward after a Retry-After of 0 or a zero delay', () => {
    expect(decide({ kind: 'pending', retryAfterMs: 0 })).toEqual({
      kind: 'poll_again',
      at: NOW + 1,
      polls: 4,
    });
    expect(decidePoll(pollFacts(), { kind: 'error' }, RULES, NOW, () => 0)).toMatchObject({
      at: NOW + 1,
    });
  });

  it('polls again after an error of the GET, on the schedule', () => {
    expect(decide({ kind: 'error' }, { polls: 0 })).toEqual({
      kind: 'poll_again',
      at: NOW + 4_000,
      polls: 1,
    });
  });

  it('never schedules a poll past the deadline', () => {
    const deadline = NOW + 1_000;
    const facts = { submittedAt: deadline - RULES.deadlineMs };
    expect(decide({ kind: 'pending' }, facts)).toEqual({
      kind: 'poll_again',
      at: deadline,
      polls: 4,
    });
    expect(decide({ kind: 'pending', retryAfterMs: 60_000 }, facts)).toMatchObject({
      at: deadline,
    });
    expect(decide({ kind: 'error' }, facts)).toMatchObject({ at: deadline });
  });

  it('times out a job still pending (or unreachable) at or after the deadline', () => {
    const timedOut = ending('timed_out', {
      code: 'ERR_QUERY_TIMED_OUT',
      message: 'the remote job did not end in time',
    });
    const submittedAt = NOW - RULES.deadlineMs;
    expect(decide({ kind: 'pending' }, { submittedAt })).toEqual(timedOut);
    expect(decide({ kind: 'pending', retryAfterMs: 1_000 }, { submittedAt })).toEqual(timedOut);
    expect(decide({ kind: 'error' }, { submittedAt: submittedAt - 1 })).toEqual(timedOut);
    expect(decide({ kind: 'pending' }, { submittedAt: submittedAt + 1 })).toMatchObject({
      kind: 'poll_again',
      at: NOW + 1,
    });
  });

  it("lets a 429's Retry-After win over rules.rateLimitMs on a poll", () => {
    const limited = { ...RULES, rateLimitMs: 1_500 };
    const answer: PollAnswer = { kind: 'rate_limited', retryAfterMs: 7_000 };
    expect(decidePoll(pollFacts(), answer, limited, NOW, schedule)).toEqual(
      held('rate_limited', 7_000),
    );
  });

  it('holds a refused key for auth_pause_ms on a poll, never for rate_limit_ms', () => {
    const limited = { ...RULES, rateLimitMs: 1_500 };
    expect(decidePoll(pollFacts(), { kind: 'auth_refused' }, limited, NOW, schedule)).toEqual(
      held('auth_refused', RULES.authPauseMs),
    );
  });

  it('does not ask the schedule when the job ended, was lost or was held', () => {
    delays.length = 0;
    decide({ kind: 'success', concordance });
    decide({ kind: 'failure', status: 'error', concordance: null });
    decide({ kind: 'lost' });
    decide({ kind: 'rate_limited' });
    decide({ kind: 'auth_refused' });
    expect(delays).toEqual([]);
  });

  it('ends a lost job lost once resubmissions are used up, after the deadline too', () => {
    const facts = { submittedAt: NOW - 2 * RULES.deadlineMs, resubmits: RULES.resubmitLost };
    expect(decide({ kind: 'lost' }, facts)).toMatchObject({
      outcome: 'lost',
      failure: { code: 'ERR_REMOTE_JOB_LOST' },
    });
  });

  it('holds a 429 after the deadline (the next pending answer times it out)', () => {
    const facts = { submittedAt: NOW - 2 * RULES.deadlineMs };
    expect(decide({ kind: 'rate_limited', retryAfterMs: 2_000 }, facts)).toEqual(
      held('rate_limited', 2_000),
    );
    expect(decide({ kind: 'failure', status: 'error', concordance: null }, facts)).toMatchObject({
      outcome: 'failed',
      failure: { code: 'ERR_REMOTE_JOB_FAILED' },
    });
  });

  it('still ends a job found ended, lost or refused after the deadline as the service said', () => {
    const facts = { submittedAt: NOW - 2 * RULES.deadlineMs };
    expect(decide({ kind: 'success', concordance }, facts)).toMatchObject({
      outcome: 'completed',
    });
    expect(decide({ kind: 'lost' }, facts)).toEqual({ kind: 'resubmit' });
    expect(decide({ kind: 'auth_refused' }, facts)).toMatchObject({ kind: 'hold' });
  });
});

describe('the lifecycle (properties)', () => {
  const rulesArb = fc.record({
    deadlineMs: fc.integer({ min: 1, max: 3_600_000 }),
    resubmitLost: fc.integer({ min: 0, max: 5 }),
    deliverSuperseded: fc.boolean(),
    maxStalledCount: fc.integer({ min: 0, max: 5 }),
    authPauseMs: fc.integer({ min: 1, max: 3_600_000 }),
    submitAttempts: fc.integer({ min: 1, max: 10 }),
    rateLimitMs: fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: undefined }),
  });
  const factsArb = fc.record({
    submittedAt: fc.integer({ min: NOW - 7_200_000, max: NOW + 60_000 }),
    polls: fc.nat({ max: 1_000 }),
    resubmits: fc.nat({ max: 10 }),
    superseded: fc.boolean(),
    leases: fc.integer({ min: 1, max: 10 }),
  });
  const ms = fc.option(fc.nat({ max: 600_000 }), { nil: undefined });
  const concordanceArb = fc.option(fc.dictionary(fc.string(), fc.jsonValue()), { nil: null });
  /** An answer of `kind` with a Retry-After, or without one. */
  const waitArb = (kind: 'pending' | 'rate_limited') =>
    ms.map((retryAfterMs): PollAnswer =>
      retryAfterMs === undefined ? { kind } : { kind, retryAfterMs },
    );
  const answerArb = fc.oneof(
    waitArb('pending'),
    concordanceArb.map((concordance): PollAnswer => ({ kind: 'success', concordance })),
    fc
      .tuple(fc.string(), concordanceArb)
      .map(([status, concordance]): PollAnswer => ({ kind: 'failure', status, concordance })),
    waitArb('rate_limited'),
    fc.constantFrom<PollAnswer>({ kind: 'lost' }, { kind: 'auth_refused' }, { kind: 'error' }),
  );

  /** An ending's outcome is the one the result-code contract gives its code. */
  const expectContractual = (decision: {
    kind: string;
    outcome?: string;
    failure?: { code: string };
  }) => {
    if (decision.kind !== 'end') return;
    if (decision.failure === undefined) {
      expect(decision.outcome).toBe('completed');
      return;
    }
    expect(Object.keys(RESULT_ERROR_CODES)).toContain(decision.failure.code);
    expect(decision.outcome).toBe(RESULT_ERROR_CODES[decision.failure.code as ResultErrorCode]);
  };

  it('decidePoll: polls again within (now, submittedAt + deadline], ends by the contract', () => {
    fc.assert(
      fc.property(
        factsArb,
        answerArb,
        rulesArb,
        fc.integer({ min: NOW - 60_000, max: NOW + 7_200_000 }),
        fc.nat({ max: 120_000 }),
        (facts, answer, rules, now, delayMs) => {
          const decision = decidePoll(facts, answer, rules, now, () => delayMs);
          const deadline = facts.submittedAt + rules.deadlineMs;
          switch (decision.kind) {
            case 'poll_again':
              expect(decision.at).toBeGreaterThan(now);
              expect(decision.at).toBeLessThanOrEqual(deadline);
              expect(decision.polls).toBe(facts.polls + 1);
              break;
            case 'hold':
              expect(decision.until).toBeGreaterThanOrEqual(now);
              break;
            case 'resubmit':
              expect(answer.kind).toBe('lost');
              expect(facts.resubmits).toBeLessThan(rules.resubmitLost);
              break;
            case 'end':
              expectContractual(decision);
              if (answer.kind === 'pending' || answer.kind === 'error') {
                expect(now).toBeGreaterThanOrEqual(deadline);
              }
              break;
            case 'forget':
              throw new Error('decidePoll never forgets');
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('decideBeforePoll and decideBeforeSubmit end by the contract', () => {
    fc.assert(
      fc.property(
        factsArb,
        rulesArb,
        fc.record({ optedOut: fc.boolean(), superseded: fc.boolean(), hasRecord: fc.boolean() }),
        (facts, rules, claimed) => {
          const beforePoll = decideBeforePoll(facts, rules);
          if (beforePoll !== undefined) expectContractual(beforePoll);
          const beforeSubmit = decideBeforeSubmit(claimed, rules);
          if (beforeSubmit !== undefined) expectContractual(beforeSubmit);
        },
      ),
    );
  });
});
