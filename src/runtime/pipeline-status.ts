import { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Config } from '../config/config-schema.ts';
import { DeadLetterStore } from '../delivery/dead-letter-store.ts';
import { WEBHOOK_DELIVERIES } from '../delivery/webhook-deliveries-queue.ts';
import { QUEUE_JOB_STATES } from '../observability/pipeline-metrics.ts';
import { AuthPause } from '../queues/auth-pause.ts';
import { DemographicsWait } from '../records/demographics-wait.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import { topUnmappedProblems, type UnmappedCode } from '../terminology/unmapped-problems.ts';

export type QueueJobState = (typeof QUEUE_JOB_STATES)[number];

export interface QueueStatus {
  name: string;
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
  queues: QueueStatus[];
  /** Deliveries given up on and kept for `replay`. */
  dead_letters: { count: number };
  /** Problem codes no terminology source mapped, most reported first (codes only, no patient). */
  unmapped_problems: UnmappedCode[];
  /** (patient, category) queries waiting for the patient's birth date (DemographicsWait). */
  waiting_for_demographics: { count: number };
}

export interface ReadStatusOptions {
  config: Config;
  /** A request connection: a status read fails fast while Redis is unreachable. */
  redis: RedisClient;
  /** @defaultValue `Date.now` */
  now?: () => number;
}

/** The queues this configuration uses, the webhook's only when configured or already present. */
async function queueNames(config: Config, redis: RedisClient): Promise<string[]> {
  const names = [CONCORDANCE_QUERIES];
  if (
    config.delivery.outbound_queue.enabled ||
    (await exists(redis, config, config.delivery.outbound_queue.name))
  ) {
    names.push(config.delivery.outbound_queue.name);
  }
  if (config.delivery.webhook.url !== null || (await exists(redis, config, WEBHOOK_DELIVERIES))) {
    names.push(WEBHOOK_DELIVERIES);
  }
  return names;
}

async function exists(redis: RedisClient, config: Config, name: string): Promise<boolean> {
  const base = `${config.redis.prefix}:${name}`;
  return (await redis.exists(`${base}:meta`, `${base}:id`)) > 0;
}

async function queueStatus(
  queue: Queue,
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
  const at = now();
  const queues = (await queueNames(config, redis)).map((name) => {
    const queue = new Queue(name, { connection: redis, prefix });
    // A lost connection surfaces as a failed read below; the event itself is not a crash.
    queue.on('error', () => undefined);
    return queue;
  });
  try {
    return {
      generated_at: new Date(at).toISOString(),
      prefix,
      queues: await Promise.all(queues.map((q) => queueStatus(q, redis, prefix, at))),
      dead_letters: {
        count: await new DeadLetterStore({
          redis,
          prefix,
          retentionDays: config.delivery.dead_letters.retention_days,
          now,
        }).count(),
      },
      unmapped_problems: await topUnmappedProblems(redis, prefix, UNMAPPED_LISTED),
      waiting_for_demographics: { count: await new DemographicsWait({ redis, prefix }).count() },
    };
  } finally {
    await Promise.all(queues.map((q) => q.close()));
  }
}
