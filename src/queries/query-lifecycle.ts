import type { QueryOutcome } from '../interface/result-event.ts';
import type { ResultErrorCode } from './result-error-codes.ts';

/**
 * The life of one query as pure decisions: given what is known (the stored state, the service's
 * answer, the clock), what happens next. Nothing here touches Redis or HTTP; the adapters (the
 * submission worker, the poll scheduler) gather the facts, ask, and carry the decision out.
 *
 *   due -> claimed -> submitted -> polled ... -> ended
 *            |            |           |-> resubmitted (remote job lost) -> submitted ...
 *            |            |-> held (429, 401: the partition waits, the query keeps its place)
 *            |-> ended (opted out, no record, rejected, failed after its attempts)
 *   any step -> superseded (a newer query of the same key was submitted)
 */

/** How an ended query is counted (`cw_queries_finished_total{outcome}`). */
export type EndCount = QueryOutcome | 'superseded';

/** Why a query ended without a concordance. */
export interface EndFailure {
  code: ResultErrorCode;
  message: string;
  /** The service's validation items, reduced to `loc`, `msg` and `type`. */
  items?: { loc: (string | number)[]; msg: string; type: string }[];
}

/** The query ends now, with a result event. */
export interface EndDecision {
  kind: 'end';
  outcome: QueryOutcome;
  countAs: EndCount;
  failure?: EndFailure;
  concordance?: Record<string, unknown> | null;
  /** A Prevent run's answer (its recommendations), passed through. */
  recommendations?: Record<string, unknown>;
}

/** The query ends now without an event (superseded, with `deliver_superseded` off). */
export interface ForgetDecision {
  kind: 'forget';
  countAs: 'superseded';
}

/** Poll the remote job again at `at` (epoch ms); `polls` is the count after this poll. */
export interface PollAgainDecision {
  kind: 'poll_again';
  at: number;
  polls: number;
}

/** The service no longer knows the remote job: submit the query again. */
export interface ResubmitDecision {
  kind: 'resubmit';
}

/**
 * The service refused because of something that concerns every query (429, a refused API key):
 * the partition's queries wait until `until` (epoch ms); this query keeps its place.
 */
export interface HoldDecision {
  kind: 'hold';
  reason: 'rate_limited' | 'auth_refused';
  /** How long (the service's Retry-After, or the configured wait). */
  ms: number;
  until: number;
}

/** Try the submission again after the queue's backoff. */
export interface RetryDecision {
  kind: 'retry';
}

/** The record has no birth date yet: the query waits for it (see DemographicsWait). */
export interface WaitDemographicsDecision {
  kind: 'wait_demographics';
}

export type PollDecision =
  EndDecision | ForgetDecision | PollAgainDecision | ResubmitDecision | HoldDecision;

export type SubmitFailureDecision =
  EndDecision | HoldDecision | RetryDecision | WaitDemographicsDecision;

/** The rules of the lifecycle, from `queries.*` of the config. */
export interface LifecycleRules {
  /** `queries.poll.deadline_ms`: a remote job still pending this long after submission times out. */
  deadlineMs: number;
  /** `queries.resubmit_lost`: how often a lost remote job is submitted again. */
  resubmitLost: number;
  /** `queries.deliver_superseded`: a superseded query that was submitted ends with an event. */
  deliverSuperseded: boolean;
  /** `queries.max_stalled_count`: leases a query may lose (its worker died) before it fails. */
  maxStalledCount: number;
  /** `queries.auth_pause_ms`: how long a refused API key holds the queries. */
  authPauseMs: number;
  /** `queries.submit_attempts`: submissions tried before a transient failure ends the query. */
  submitAttempts: number;
  /**
   * How long a 429 without Retry-After holds the queries.
   * @defaultValue 5000
   */
  rateLimitMs?: number;
}

/** A 429 without Retry-After holds the queries this long. */
export const DEFAULT_RATE_LIMIT_MS = 5_000;

const end = (
  outcome: QueryOutcome,
  failure?: EndFailure,
  concordance?: Record<string, unknown> | null,
  countAs: EndCount = outcome,
): EndDecision => ({
  kind: 'end',
  outcome,
  countAs,
  ...(failure === undefined ? {} : { failure }),
  ...(concordance === undefined ? {} : { concordance }),
});

/** A newer query of the key was submitted: the older one ends, with an event only if asked. */
export function supersededDecision(
  rules: Pick<LifecycleRules, 'deliverSuperseded'>,
  submitted: boolean,
): EndDecision | ForgetDecision {
  if (rules.deliverSuperseded && submitted) {
    return end(
      'failed',
      { code: 'ERR_SUPERSEDED', message: 'a newer query of this key was submitted' },
      undefined,
      'superseded',
    );
  }
  return { kind: 'forget', countAs: 'superseded' };
}

/** What is known of a due query once it is claimed, before anything is sent. */
export interface ClaimFacts {
  optedOut: boolean;
  superseded: boolean;
  /** A record (JSON or from the feeds) and the patient's local id are stored. */
  hasRecord: boolean;
}

/** Whether a claimed query goes on to be sent (`undefined`) or ends here. */
export function decideBeforeSubmit(
  facts: ClaimFacts,
  rules: Pick<LifecycleRules, 'deliverSuperseded'>,
): EndDecision | ForgetDecision | undefined {
  if (facts.optedOut) {
    return end('rejected', { code: 'ERR_PATIENT_OPTED_OUT', message: 'the patient opted out' });
  }
  if (facts.superseded) return supersededDecision(rules, false);
  if (!facts.hasRecord) {
    return end('rejected', {
      code: 'ERR_RECORD_MISSING',
      message: 'no record is stored for this patient',
    });
  }
  return undefined;
}

/** Why a submission did not produce a remote job, as the adapter classified it. */
export type SubmitFailure =
  /** The record has no birth date yet. */
  | { kind: 'birth_date_missing' }
  /** Refused before or by the service for what the record is (400-class, not worth resending). */
  | {
      kind: 'refused';
      code: Extract<
        ResultErrorCode,
        | 'ERR_RECORD_NOT_ASSEMBLABLE'
        | 'ERR_IDENTIFIER_LEAK'
        | 'ERR_SERVICE_VALIDATION'
        | 'ERR_PREVENT_NO_DATA'
      >;
      message: string;
      items?: EndFailure['items'];
    }
  | { kind: 'rate_limited'; retryAfterMs?: number }
  | { kind: 'auth_refused' }
  /** An answer that will not change by sending again (400, 404, 413, an unreadable 2xx). */
  | { kind: 'permanent'; code: ResultErrorCode; message: string }
  /** A 5xx, a timeout, a lost connection: worth another attempt. */
  | { kind: 'transient'; code: ResultErrorCode; message: string };

/**
 * What follows a failed submission. `attempt` is this attempt's number (1 = the first), counted
 * by the adapter (BullMQ's attempts).
 */
export function decideSubmitFailure(
  failure: SubmitFailure,
  attempt: number,
  rules: Pick<LifecycleRules, 'submitAttempts' | 'authPauseMs' | 'rateLimitMs'>,
  now: number,
): SubmitFailureDecision {
  switch (failure.kind) {
    case 'birth_date_missing':
      return { kind: 'wait_demographics' };
    case 'refused':
      return end('rejected', {
        code: failure.code,
        message: failure.message,
        ...(failure.items === undefined ? {} : { items: failure.items }),
      });
    case 'rate_limited':
      return holdFor('rate_limited', failure.retryAfterMs, rules, now);
    case 'auth_refused':
      return holdFor('auth_refused', undefined, rules, now);
    case 'permanent':
      return end('failed', { code: failure.code, message: failure.message });
    case 'transient':
      if (attempt >= rules.submitAttempts) {
        return end('failed', {
          code: failure.code,
          message: `${failure.message} (after ${rules.submitAttempts} attempts)`,
        });
      }
      return { kind: 'retry' };
  }
}

function holdFor(
  reason: HoldDecision['reason'],
  retryAfterMs: number | undefined,
  rules: Pick<LifecycleRules, 'authPauseMs' | 'rateLimitMs'>,
  now: number,
): HoldDecision {
  const ms =
    reason === 'auth_refused'
      ? rules.authPauseMs
      : (retryAfterMs ?? rules.rateLimitMs ?? DEFAULT_RATE_LIMIT_MS);
  return { kind: 'hold', reason, ms, until: now + ms };
}

/** What is known of a submitted query when it comes due for a poll. */
export interface PollFacts {
  submittedAt: number;
  /** Polls made so far. */
  polls: number;
  /** Resubmissions made so far (after lost remote jobs). */
  resubmits: number;
  /** A newer query of the key has been submitted. */
  superseded: boolean;
  /** Leases of this poll without an outcome written (1 = this one): > 1 means a worker died. */
  leases: number;
}

/**
 * Before the poll is sent: a superseded query ends, one whose workers kept dying ends
 * `ERR_QUERY_STALLED`; otherwise `undefined` (poll it).
 */
export function decideBeforePoll(
  facts: PollFacts,
  rules: Pick<LifecycleRules, 'deliverSuperseded' | 'maxStalledCount'>,
): EndDecision | ForgetDecision | undefined {
  if (facts.superseded) return supersededDecision(rules, true);
  return decideStalled(facts.leases, rules);
}

/**
 * A query leased `leases` times since its last written outcome (this lease included): more than
 * `max_stalled_count` + 1 means its workers kept dying with it, and it ends `ERR_QUERY_STALLED`.
 */
export function decideStalled(
  leases: number,
  rules: Pick<LifecycleRules, 'maxStalledCount'>,
): EndDecision | undefined {
  if (leases > rules.maxStalledCount + 1) {
    return end('failed', {
      code: 'ERR_QUERY_STALLED',
      message: `the query's worker stopped more than ${rules.maxStalledCount} times while it ran`,
    });
  }
  return undefined;
}

/** The service's answer to a poll, as the adapter classified it. */
export type PollAnswer =
  | { kind: 'pending'; retryAfterMs?: number }
  | { kind: 'success'; concordance: Record<string, unknown> | null }
  | { kind: 'failure'; status: string; concordance: Record<string, unknown> | null }
  /** 404: the service no longer knows the job. */
  | { kind: 'lost' }
  | { kind: 'rate_limited'; retryAfterMs?: number }
  | { kind: 'auth_refused' }
  /** Any other failure of the GET (5xx, timeout, network): poll again later. */
  | { kind: 'error' };

/**
 * What follows a poll. `nextDelayMs(polls)` is the schedule's delay before the poll numbered
 * `polls` (see the adaptive schedule); a Retry-After sent with a pending answer wins over it.
 * The next poll is at least 1 ms later and never after the deadline.
 */
export function decidePoll(
  facts: PollFacts,
  answer: PollAnswer,
  rules: Pick<LifecycleRules, 'deadlineMs' | 'resubmitLost' | 'authPauseMs' | 'rateLimitMs'>,
  now: number,
  nextDelayMs: (polls: number) => number,
): PollDecision {
  switch (answer.kind) {
    case 'success':
      return end('completed', undefined, answer.concordance);
    case 'failure':
      return end(
        'failed',
        { code: 'ERR_REMOTE_JOB_FAILED', message: `the remote job ended ${answer.status}` },
        answer.concordance,
      );
    case 'lost':
      if (facts.resubmits < rules.resubmitLost) return { kind: 'resubmit' };
      return end('lost', {
        code: 'ERR_REMOTE_JOB_LOST',
        message: 'the service no longer knows the job',
      });
    case 'rate_limited':
      return holdFor('rate_limited', answer.retryAfterMs, rules, now);
    case 'auth_refused':
      return holdFor('auth_refused', undefined, rules, now);
    case 'pending':
    case 'error': {
      const deadline = facts.submittedAt + rules.deadlineMs;
      if (now >= deadline) {
        return end('timed_out', {
          code: 'ERR_QUERY_TIMED_OUT',
          message: 'the remote job did not end in time',
        });
      }
      const polls = facts.polls + 1;
      const delay =
        answer.kind === 'pending' && answer.retryAfterMs !== undefined
          ? answer.retryAfterMs
          : nextDelayMs(polls);
      // A `Retry-After: 0` (or a past date) still moves the poll forward: it is written back as
      // due later than the poll that was just made.
      return { kind: 'poll_again', at: Math.min(deadline, now + Math.max(1, delay)), polls };
    }
  }
}
