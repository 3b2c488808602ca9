import { setTimeout as sleep } from 'node:timers/promises';
import type { QueryOutcome } from '../interface/result-event.ts';
import type { PollScheduleOptions } from '../queries/poll-schedule.ts';
import { pollDelayMs } from '../queries/poll-schedule.ts';
import { decidePoll, type EndFailure, type PollAnswer } from '../queries/query-lifecycle.ts';
import { pollAnswerOf } from '../queries/service-answers.ts';
import type { ConcordanceJob, ServiceClient } from '../service/create-service-client.ts';
import { ServiceAuthError } from '../service/errors/service-auth-error.ts';

export interface WaitOptions {
  /** `queries.poll`: the delays between polls and the deadline (`deadlineMs` after submission). */
  schedule: PollScheduleOptions;
  /** When the job was submitted (epoch ms). @defaultValue now */
  submittedAt?: number;
  /** How long a 429 without Retry-After waits. @defaultValue the lifecycle's default */
  rateLimitMs?: number;
  /** Told of every answer (for a progress line). */
  onPoll?: (job: ConcordanceJob) => void;
}

export interface WaitResult {
  /** `completed`, or how the job ended without a result: `failed`, `lost`, `timed_out`. */
  outcome: QueryOutcome;
  /** The last answer read, unless none was (every poll failed). */
  job?: ConcordanceJob;
  failure?: EndFailure;
  polls: number;
}

/**
 * Polls one remote job until it ends, as the pipeline's poll scheduler does (the same decisions,
 * `decidePoll`, and the configured schedule, `pollDelayMs`): a Retry-After from the service wins,
 * a 404 or a lost status ends it `lost` (the command line never resubmits), a job still pending at
 * the deadline ends `timed_out`, and an answer that is an error (5xx, timeout, after the client's
 * own retries) is polled again later. A refused API key is thrown: nobody will fix it by waiting.
 */
export async function waitForJob(
  client: ServiceClient,
  jobId: string,
  options: WaitOptions,
): Promise<WaitResult> {
  const submittedAt = options.submittedAt ?? Date.now();
  const rules = {
    deadlineMs: options.schedule.deadlineMs,
    resubmitLost: 0,
    authPauseMs: 0,
    ...(options.rateLimitMs === undefined ? {} : { rateLimitMs: options.rateLimitMs }),
  };
  let polls = 0;
  let job: ConcordanceJob | undefined;
  let delay = pollDelayMs(0, options.schedule);
  for (;;) {
    await sleep(Math.max(0, delay));
    let answer: PollAnswer | undefined;
    try {
      job = await client.concordance.get(jobId);
      options.onPoll?.(job);
      answer = pollAnswerOf(job, false);
    } catch (err) {
      answer = err instanceof ServiceAuthError ? undefined : pollAnswerOf(err, true);
      if (answer === undefined) throw err;
    }
    const now = Date.now();
    const decision = decidePoll(
      { submittedAt, polls, resubmits: 0, superseded: false, leases: 1 },
      answer ?? { kind: 'error' },
      rules,
      now,
      (n) => pollDelayMs(n, options.schedule),
    );
    switch (decision.kind) {
      case 'end':
        return {
          outcome: decision.outcome,
          ...(job === undefined ? {} : { job }),
          ...(decision.failure === undefined ? {} : { failure: decision.failure }),
          polls: polls + 1,
        };
      case 'poll_again':
        polls = decision.polls;
        delay = decision.at - now;
        break;
      case 'hold':
        polls += 1;
        delay = decision.ms;
        break;
      case 'resubmit':
      case 'forget':
        // Neither happens with resubmitLost 0 and a query nobody supersedes.
        throw new Error(`unreachable: poll decision ${decision.kind}`);
    }
  }
}
