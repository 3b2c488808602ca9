import pino from 'pino';
import type { FeedMetrics } from '../../src/observability/feed-metrics.ts';
import { LatencyProfiles } from '../../src/queries/latency-profiles.ts';
import { PollScheduler } from '../../src/queries/poll-scheduler.ts';
import { holdKey, PollSet } from '../../src/queries/poll-set.ts';
import type { PollAnswer } from '../../src/queries/query-lifecycle.ts';
import type { QuerySpans } from '../../src/queries/query-spans.ts';
import { QuerySubmission } from '../../src/queries/query-submission.ts';
import { SubmissionStore } from '../../src/queries/submission-store.ts';
import { RULES, SCHEDULE, type SubmissionFixture } from './submission-fixture.ts';

/** What a query's steps write their traces with: the trace TTL (0: off), spans, feed counters. */
export interface StepParts {
  ttl: number;
  spans?: QuerySpans | undefined;
  feeds?: FeedMetrics | undefined;
}

const silent = pino({ level: 'silent' });

function pollSetOf(fx: SubmissionFixture, traceTtlS?: number): PollSet {
  const { env } = fx;
  return new PollSet({
    redis: env.redis,
    prefix: env.prefix,
    holdKey: holdKey(env.prefix),
    pauseKey: `${env.prefix}:paused`,
    ...(traceTtlS === undefined ? {} : { traceTtlS }),
  });
}

/**
 * A QuerySubmission on the fixture's ports and clock whose scripts write the query's trace for
 * `ttl` seconds: its own store, and `mark-submitted` through the real QueryState with that TTL.
 */
export function stepSubmission(fx: SubmissionFixture, parts: StepParts): QuerySubmission {
  const { env } = fx;
  return new QuerySubmission({
    store: new SubmissionStore(env.redis, env.prefix, parts.ttl),
    ports: {
      ...fx.ports,
      submitted: (query, remote, firstPollAt) =>
        fx.stack.state.markSubmitted(
          query.patientServiceId,
          query.ccsrCategory,
          query.seq,
          remote,
          firstPollAt,
          parts.ttl,
        ),
    },
    profiles: new LatencyProfiles({ source: pollSetOf(fx), now: () => fx.clock }),
    rules: RULES,
    schedule: SCHEDULE,
    demographicsWaitS: 60,
    logger: silent,
    feeds: parts.feeds,
    spans: parts.spans,
    now: () => fx.clock,
  });
}

/**
 * A PollScheduler on the fixture's clock whose polls write the query's trace for `ttl` seconds;
 * `poll` answers each poll (pending by default), results go to `fx.delivered`.
 */
export function stepPoller(
  fx: SubmissionFixture,
  parts: StepParts & { poll?: (remoteJobId: string) => Promise<PollAnswer> },
): PollScheduler {
  const polls = pollSetOf(fx, parts.ttl);
  return new PollScheduler({
    polls,
    ports: {
      poll: parts.poll ?? (async () => ({ kind: 'pending' })),
      localIdOf: async (psid) => `local-${psid}`,
      deliver: async (events) => void fx.delivered.push(events),
      pauseForAuth: async () => undefined,
    },
    profiles: new LatencyProfiles({ source: polls, now: () => fx.clock }),
    rules: RULES,
    schedule: SCHEDULE,
    polling: { interval_ms: 10, batch: 10, concurrency: 10, lease_ms: 30_000 },
    logger: silent,
    spans: parts.spans,
    now: () => fx.clock,
  });
}
