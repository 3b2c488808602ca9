import { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Config } from '../config/config-schema.ts';
import { DeadLetterStore } from '../delivery/dead-letter-store.ts';
import { deploymentQueues } from '../delivery/deployment-queues.ts';
import { QUEUE_JOB_STATES } from '../observability/pipeline-metrics.ts';
import { AuthPause } from '../queues/auth-pause.ts';
import { Partitions } from '../queues/partitions.ts';
import { holdKey, PollSet } from '../queries/poll-set.ts';
import { DemographicsWait } from '../records/demographics-wait.ts';
import { topUnmappedProblems, type UnmappedCode } from '../terminology/unmapped-problems.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import { retryingSubmissions, type RetryingSubmissions } from './retrying-submissions.ts';
import { ServiceHealthRecord, type ReportedServiceHealth } from './service-health-record.ts';

export type QueueJobState = (typeof QUEUE_JOB_STATES)[number];

export interface QueueStatus {
  name: string;
  /** The partition the queue belongs to (`redis.partitions`; the outbound queue is 0's). */
  partition: number;
  counts: Record<QueueJobState, number>;
  /** Paused (by an operator, or by a worker because the service refused the API key). */
  paused: boolean;
  /** Paused by a worker because the service refused the API key (`src/queues/auth-pause.ts`). */
  auth_paused: boolean;
  /** Milliseconds the queue is still held for a rate limit (a 429's Retry-After), else null. */
  rate_limited_ms: number | null;
  /** Age (since it was created) of the oldest job waiting to be picked up, else null. */
  oldest_waiting_age_ms: number | null;
}

export interface PipelineStatus {
  generated_at: string;
  prefix: string;
  /** `redis.partitions`: each partition has its own query and webhook queues. */
  partitions: number;
  queues: QueueStatus[];
  /** Deliveries given up on and kept for `replay`. */
  dead_letters: { count: number };
  /** Problem codes no terminology source mapped, most reported first (codes only, no patient). */
  unmapped_problems: UnmappedCode[];
  /** (patient, category) queries waiting for the patient's birth date (DemographicsWait). */
  waiting_for_demographics: { count: number };
  /**
   * Submitted queries in each partition's due set of polls: how many, how many are due, how late
   * the oldest due one is, and the rate-limit hold on the partition's polls (ms left), if any.
   */
  polls: {
    partition: number;
    queries: number;
    due: number;
    oldest_due_ms: number | null;
    held_ms: number | null;
  }[];
  /**
   * Each partition's queries waiting to be submitted (`concordance-queries`: waiting, delayed —
   * a debounce, a retry's backoff, a birth date —, active) and those retrying after a failure.
   */
  submissions: ({
    partition: number;
    waiting: number;
    delayed: number;
    active: number;
  } & RetryingSubmissions)[];
  /**
   * The Clinical Graph Service's health per host, as the workers last reported it (most recent
   * first; empty until a worker made a request).
   */
  service: ReportedServiceHealth[];
}

export interface ReadStatusOptions {
  config: Config;
  /** A request connection: a status read fails fast while Redis is unreachable. */
  redis: RedisClient;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

async function queueStatus(
  queue: Queue,
  partition: number,
  redis: RedisClient,
  prefix: string,
  now: number,
): Promise<QueueStatus> {
  const [counts, paused, authPaused, global, [oldest]] = await Promise.all([
    queue.getJobCounts(...QUEUE_JOB_STATES),
    queue.isPaused(),
    new AuthPause(queue, redis, prefix).isPaused(),
    queue.getGlobalRateLimit(),
    queue.getJobs(['waiting'], 0, 0, true),
  ]);
  // A hold set with queue.rateLimit() (what a 429 does) counts as over any maximum; the workers'
  // own limiter counter (which expires every second in normal work) does not.
  const ttl = await queue.getRateLimitTtl(global?.max ?? Number.MAX_SAFE_INTEGER);
  return {
    name: queue.name,
    partition,
    counts: Object.fromEntries(QUEUE_JOB_STATES.map((s) => [s, counts[s] ?? 0])) as Record<
      QueueJobState,
      number
    >,
    paused,
    auth_paused: authPaused,
    rate_limited_ms: ttl > 0 ? ttl : null,
    oldest_waiting_age_ms: oldest === undefined ? null : Math.max(0, now - oldest.timestamp),
  };
}

/** How many unmapped problem codes `status` lists. */
const UNMAPPED_LISTED = 20;

/** What `concordance-worker status` shows: every queue's state, and the dead letters. */
export async function readPipelineStatus({
  config,
  redis,
  now = Date.now,
}: ReadStatusOptions): Promise<PipelineStatus> {
  const prefix = config.redis.prefix;
  const partitions = Partitions.of(config.redis);
  const at = now();
  const queues = (await deploymentQueues(config, redis, partitions)).map(({ name, partition }) => {
    const queue = new Queue(name, { connection: redis, prefix: partitions.prefixAt(partition) });
    // A lost connection surfaces as a failed read below; the event itself is not a crash.
    queue.on('error', () => undefined);
    return { queue, partition };
  });
  try {
    const letters = await Promise.all(
      partitions.prefixes.map((p) =>
        new DeadLetterStore({
          redis,
          prefix: p,
          retentionDays: config.delivery.dead_letters.retention_days,
          now,
        }).count(),
      ),
    );
    const statuses = await Promise.all(
      queues.map(({ queue, partition }) =>
        queueStatus(queue, partition, redis, partitions.prefixAt(partition), at),
      ),
    );
    const submissions = await Promise.all(
      queues
        .filter(({ queue }) => queue.name === CONCORDANCE_QUERIES)
        .map(async ({ queue, partition }) => {
          const counts = statuses.find(
            (q) => q.name === CONCORDANCE_QUERIES && q.partition === partition,
          )?.counts;
          return {
            partition,
            waiting: (counts?.waiting ?? 0) + (counts?.prioritized ?? 0),
            delayed: counts?.delayed ?? 0,
            active: counts?.active ?? 0,
            ...(await retryingSubmissions(queue)),
          };
        }),
    );
    return {
      generated_at: new Date(at).toISOString(),
      prefix,
      partitions: partitions.count,
      queues: statuses,
      dead_letters: { count: letters.reduce((a, b) => a + b, 0) },
      unmapped_problems: await topUnmappedProblems(redis, prefix, UNMAPPED_LISTED),
      waiting_for_demographics: {
        count: await new DemographicsWait({ redis, prefix: partitions }).count(),
      },
      polls: await Promise.all(
        partitions.prefixes.map(async (p, partition) => {
          const polls = new PollSet({ redis, prefix: p, holdKey: holdKey(p), pauseKey: '' });
          const [depth, held] = await Promise.all([polls.depth(at), redis.pttl(holdKey(p))]);
          return {
            partition,
            queries: depth.size,
            due: depth.due,
            oldest_due_ms: depth.oldestDueAt === null ? null : Math.max(0, at - depth.oldestDueAt),
            held_ms: held > 0 ? held : null,
          };
        }),
      ),
      submissions,
      service: await new ServiceHealthRecord(redis, prefix).read(),
    };
  } finally {
    await Promise.all(queues.map(({ queue }) => queue.close()));
  }
}
