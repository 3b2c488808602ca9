import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../src/queues/redis-client.ts';
import type { Logger } from 'pino';
import type { DeliverySlice } from '../src/config/config-slices.ts';
import { outboundAgents } from '../src/connections/outbound-agents.ts';
import type { DeadLetterError } from '../src/delivery/dead-letter.ts';
import type { DeadLetterStore } from '../src/delivery/dead-letter-store.ts';
import { DeliveryConfigError } from '../src/delivery/delivery-config-error.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import { updateToDeliverySeconds } from '../src/delivery/update-to-delivery.ts';
import {
  webhookRetryDelayMs,
  type WebhookBackoffOptions,
} from '../src/delivery/webhook-backoff.ts';
import { WebhookClient } from '../src/delivery/webhook-client.ts';
import {
  WEBHOOK_DELIVERIES,
  type WebhookJobData,
} from '../src/delivery/webhook-deliveries-queue.ts';
import type { WebhookDeliveryError } from '../src/delivery/webhook-delivery-error.ts';
import { WebhookDeliveryJobs } from '../src/delivery/webhook-delivery-jobs.ts';
import { WebhookDeliveryStore } from '../src/delivery/webhook-delivery-store.ts';
import { WebhookSigner } from '../src/delivery/webhook-signer.ts';
import type { CrosswalkKeys } from '../src/identity/crosswalk-keys.ts';
import type { PipelineMetrics } from '../src/observability/pipeline-metrics.ts';

export interface WebhookDeliveriesDeps {
  /** `delivery.*` and `outbound.*` (see configSlices). */
  config: DeliverySlice;
  /** A worker connection (`maxRetriesPerRequest: null`). */
  connection: RedisClient;
  prefix: string;
  /** The crosswalk keys: waiting events rest sealed; each is opened just before its POST. */
  keys: CrosswalkKeys;
  logger: Logger;
  metrics?: PipelineMetrics;
  /** Where given-up deliveries go (`delivery.dead_letters.retention_days`). */
  deadLetters: DeadLetterStore;
  /**
   * How long a job waiting for its key's previous event sleeps before looking again by itself.
   * Normally the previous event's job wakes it at once; this only bounds the wait when that wake-up
   * was lost (a worker killed in between), as does the recovery sweep run at this interval.
   * @defaultValue 300_000
   */
  parkMs?: number;
  /** @defaultValue true */
  autorun?: boolean;
  /** @defaultValue `Date.now` */
  now?: () => number;
  /** For the backoff's jitter. @defaultValue `Math.random` */
  random?: () => number;
}

/** What a delivery job came to (its BullMQ return value). */
export type WebhookJobResult =
  | { outcome: 'delivered'; status: number; attempt: number }
  | { outcome: 'dead_lettered'; code: string; attempt: number }
  | { outcome: 'skipped'; reason: 'missing' | 'delivered' | 'dead' | 'stale' };

const CHANNEL = 'webhook';

function lastError(error: WebhookDeliveryError): DeadLetterError {
  return { code: error.code, status: error.status ?? null, message: error.message };
}

/**
 * The webhook delivery queue and its worker. A job is one event's delivery: it waits (parked,
 * holding no slot) until its event is first in its key's line, POSTs it signed, and on failure
 * waits again for its backoff, until a 2xx, a 410 or `max_age_ms` since the event entered the
 * queue; then it leaves the line and wakes the next event's job.
 */
export async function initWebhookDeliveries(deps: WebhookDeliveriesDeps): Promise<{
  name: string;
  queue: Queue<WebhookJobData>;
  worker: Worker<WebhookJobData, WebhookJobResult>;
}> {
  const { config, connection, prefix, logger, metrics, deadLetters } = deps;
  const webhook = config.delivery.webhook;
  if (webhook.url === null || webhook.secret === undefined) {
    throw new DeliveryConfigError('the webhook worker needs WEBHOOK_URL and WEBHOOK_SECRET');
  }
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const parkMs = deps.parkMs ?? 300_000;
  const backoff: WebhookBackoffOptions = {
    firstDelayMs: webhook.backoff.first_delay_ms,
    maxDelayMs: webhook.backoff.max_delay_ms,
    jitter: webhook.backoff.jitter,
  };
  const signer = new WebhookSigner(webhook.secret);
  const client = new WebhookClient({
    url: webhook.url,
    timeoutMs: webhook.timeout_ms,
    agent: outboundAgents(config.outbound),
  });
  const store = new WebhookDeliveryStore({
    redis: connection,
    prefix,
    keys: deps.keys,
    deadTtlS: config.delivery.dead_letters.retention_days * 86_400,
  });
  const queue = new Queue<WebhookJobData>(WEBHOOK_DELIVERIES, { connection, prefix });
  const jobs = new WebhookDeliveryJobs(queue, store);

  async function park(job: Job<WebhookJobData>, token: string | undefined): Promise<never> {
    // BullMQ promotes delayed jobs by the machine's clock, not by `now`: give it a moment on that
    // clock (the same as now() + parkMs in production, where now is Date.now).
    await job.moveToDelayed(Date.now() + parkMs, token);
    // The previous event may have finished between our look at the line and the move above; its
    // wake-up then found this job still active and did nothing. Looking once more after the move
    // closes that gap: whoever finishes first, one of the two sees the other.
    if ((await store.head(job.data.query_key)) === job.data.event_id) {
      await job.promote().catch(() => undefined);
    }
    throw new DelayedError();
  }

  async function deadLetter(
    event: ResultEvent,
    key: string,
    error: WebhookDeliveryError,
    times: { attempt: number; firstAttemptAt: number; lastAttemptAt: number; at: number },
  ): Promise<WebhookJobResult> {
    const { attempt, firstAttemptAt, lastAttemptAt, at } = times;
    const next = await store.dead(event.id, key, at, (multi) =>
      deadLetters.stage(multi, {
        event,
        channel: CHANNEL,
        last_error: lastError(error),
        attempts: attempt,
        first_attempt_at: new Date(firstAttemptAt).toISOString(),
        last_attempt_at: new Date(lastAttemptAt).toISOString(),
        dead_lettered_at: new Date(at).toISOString(),
      }),
    );
    metrics?.deliveries.inc({ channel: CHANNEL, outcome: 'dead_lettered' });
    metrics?.deadLetters.inc({ channel: CHANNEL });
    if (next !== undefined) await jobs.wake(next);
    return { outcome: 'dead_lettered', code: error.code, attempt };
  }

  const worker = new Worker<WebhookJobData, WebhookJobResult>(
    WEBHOOK_DELIVERIES,
    async (job, token, signal) => {
      const { event_id: eventId, query_key: key } = job.data;
      const startedAt = now();
      const start = await store.begin(eventId, job.id ?? '', key, startedAt);
      if (start.kind === 'waiting') {
        // Heals a line whose first event lost its job; a no-op otherwise.
        if (start.head !== undefined) await jobs.wake(start.head);
        return park(job, token);
      }
      if (start.kind !== 'go') {
        logger.debug(
          { event_id: eventId, query_key: key, state: start.kind },
          'delivery job skipped',
        );
        return { outcome: 'skipped', reason: start.kind };
      }
      const { event, attempt, enqueuedAt, firstAttemptAt } = start;
      // Fresh timestamp and signature per attempt; the webhook-id stays the event id.
      const result = await client.post(signer.sign(event, new Date(startedAt)), signal);
      const at = now();
      const log = { event_id: eventId, query_key: key, attempt };
      if (result.ok) {
        const next = await store.delivered(eventId, key, at);
        metrics?.deliveries.inc({ channel: CHANNEL, outcome: 'delivered' });
        const seconds = updateToDeliverySeconds(event, at);
        if (seconds !== undefined) metrics?.updateToDelivery.observe({ channel: CHANNEL }, seconds);
        logger.info({ ...log, status: result.status, outcome: 'delivered' }, 'webhook delivered');
        if (next !== undefined) await jobs.wake(next);
        // The first success after failures: the endpoint answers again, so the deliveries waiting
        // out their backoff go now rather than when each backoff ends.
        if (await store.clearFailing()) {
          const resumed = await jobs.resume();
          logger.info({ resumed }, 'webhook endpoint answers again: waiting deliveries resumed');
        }
        return { outcome: 'delivered', status: result.status, attempt };
      }
      const { error } = result;
      const status = error.status ?? null;
      const deadline = enqueuedAt + webhook.max_age_ms;
      if (!error.retryable || at >= deadline) {
        const given = await deadLetter(event, key, error, {
          attempt,
          firstAttemptAt,
          lastAttemptAt: startedAt,
          at,
        });
        const reason = error.retryable ? 'max_age_exceeded' : 'endpoint_gone';
        logger.warn(
          { ...log, status, error_code: error.code, outcome: 'dead_lettered', reason },
          'webhook delivery given up: dead-lettered',
        );
        return given;
      }
      // The last retry falls on the deadline rather than past it.
      const retryAt = Math.min(at + webhookRetryDelayMs(attempt, backoff, random), deadline);
      await store.recordFailure(eventId, lastError(error));
      metrics?.deliveries.inc({ channel: CHANNEL, outcome: 'retried' });
      logger.warn(
        { ...log, status, error_code: error.code, outcome: 'retried', retry_in_ms: retryAt - at },
        'webhook attempt failed; retrying later',
      );
      // retryAt is on our clock; BullMQ promotes by the machine's: hand it the same wait on that one.
      await job.moveToDelayed(Date.now() + (retryAt - at), token);
      // After the move, so that a success elsewhere that clears the mark finds this job delayed.
      await store.markFailing(at, webhook.max_age_ms);
      throw new DelayedError();
    },
    {
      connection,
      prefix,
      concurrency: webhook.concurrency,
      // A killed worker's job comes back after a lock period and may survive several crashes: the
      // store says where it was, so stalling is never fatal.
      maxStalledCount: 10,
      autorun: deps.autorun ?? true,
    },
  );
  worker.on('failed', (job, err) => {
    // Unexpected errors only (Redis); delivery failures never fail a job. The message of such an
    // error names no payload; the event id and key identify the delivery.
    if (job) {
      logger.error(
        {
          event_id: job.data.event_id,
          query_key: job.data.query_key,
          err: { name: err.name, message: err.message },
        },
        'webhook delivery job failed',
      );
    }
  });

  // Heal what crashes left behind at start, then now and then.
  const sweep = async () => {
    try {
      await jobs.sweep();
    } catch (err) {
      logger.warn(
        { err: { name: (err as Error).name, message: (err as Error).message } },
        'webhook recovery sweep failed',
      );
    }
  };
  await sweep();
  const timer = setInterval(() => void sweep(), parkMs);
  timer.unref();
  // While the endpoint fails, one waiting delivery is tried every probe interval (one worker
  // process at a time); its success resumes the others (see above).
  const probeMs = webhook.probe_interval_ms;
  const probe = async () => {
    try {
      if ((await store.isFailing()) && (await store.takeProbeTurn(probeMs))) {
        const eventId = await jobs.probe();
        if (eventId !== undefined) logger.debug({ event_id: eventId }, 'webhook endpoint probed');
      }
    } catch (err) {
      logger.warn(
        { err: { name: (err as Error).name, message: (err as Error).message } },
        'webhook probe failed',
      );
    }
  };
  const probeTimer = probeMs > 0 ? setInterval(() => void probe(), probeMs) : undefined;
  probeTimer?.unref();
  worker.on('closing', () => {
    clearInterval(timer);
    clearInterval(probeTimer);
  });

  return { name: WEBHOOK_DELIVERIES, queue, worker };
}
