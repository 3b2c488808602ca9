import { DelayedError, Queue, Worker, type Job, type Processor } from 'bullmq';
import type { RedisClient } from '../src/queues/redis-client.ts';
import type { Logger } from 'pino';
import type { DeliverySlice } from '../src/config/config-slices.ts';
import { webhookTransportProblems } from '../src/config/webhook-transport.ts';
import { outboundAgents } from '../src/connections/outbound-agents.ts';
import type { DeadLetterError } from '../src/delivery/dead-letter.ts';
import type { DeadLetterStore } from '../src/delivery/dead-letter-store.ts';
import { DeliveryConfigError } from '../src/delivery/delivery-config-error.ts';
import { updateToDeliverySeconds } from '../src/delivery/update-to-delivery.ts';
import {
  webhookRetryDelayMs,
  type WebhookBackoffOptions,
} from '../src/delivery/webhook-backoff.ts';
import { WebhookClient, type WebhookAttemptResult } from '../src/delivery/webhook-client.ts';
import {
  WEBHOOK_DELIVERIES,
  type WebhookJobData,
} from '../src/delivery/webhook-deliveries-queue.ts';
import type { WebhookDeliveryError } from '../src/delivery/webhook-delivery-error.ts';
import { WebhookDeliveryJobs } from '../src/delivery/webhook-delivery-jobs.ts';
import { WebhookDeliveryStore, type AttemptStart } from '../src/delivery/webhook-delivery-store.ts';
import { WebhookSigner, type SignedWebhook } from '../src/delivery/webhook-signer.ts';
import { endAttempt, WebhookSpans } from '../src/delivery/webhook-span.ts';
import type { TracingHandle } from '../src/observability/tracing/start-tracing.ts';
import type { CrosswalkKeys } from '../src/identity/crosswalk-keys.ts';
import { deliveryTraceTtlOf } from '../src/delivery/create-delivery-router.ts';
import type { FeedMetrics } from '../src/observability/feed-metrics.ts';
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
  /** `cw_feed_messages_total`: each event the endpoint took counts `delivered` by its feed. */
  feeds?: FeedMetrics;
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
  /**
   * The process's tracing (startTracing): on, each attempt is a `webhook.deliver` span in the
   * message's trace whose request carries `traceparent`, and the queue and its worker trace their
   * jobs (bullmq-otel). Off or absent, nothing is traced and no header is sent.
   */
  tracing?: Pick<TracingHandle, 'enabled' | 'tracer' | 'bullmqTelemetry'>;
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
 * What {@link webhookDeliveryProcessor} works with: the parts {@link initWebhookDeliveriesWorker}
 * builds from its deps once per worker (unit tests build their own).
 */
export interface WebhookDeliveryParts {
  /** The events' delivery state and their keys' lines. */
  store: WebhookDeliveryStore;
  /** The delivery queue's jobs: wakes the job of the next event in a line. */
  jobs: WebhookDeliveryJobs;
  /** POSTs to `delivery.webhook.url`. */
  client: WebhookClient;
  /** Signs each attempt afresh with `delivery.webhook.secret`. */
  signer: WebhookSigner;
  /** Where given-up deliveries go. */
  deadLetters: DeadLetterStore;
  logger: Logger;
  metrics?: PipelineMetrics | undefined;
  /** Counts `delivered` by the feed of the event's query. */
  feeds?: FeedMetrics | undefined;
  /** `delivery.webhook.max_age_ms`: how long after entering the queue an event is still tried. */
  maxAgeMs: number;
  /** `delivery.webhook.backoff`: the wait after each failed attempt. */
  backoff: WebhookBackoffOptions;
  /** How long a job waiting for its key's previous event sleeps (see WebhookDeliveriesDeps). */
  parkMs: number;
  now: () => number;
  /** For the backoff's jitter. */
  random: () => number;
  /** Each attempt's `webhook.deliver` span (tracing on); undefined when tracing is off. */
  spans?: WebhookSpans | undefined;
}

type WebhookJob = Job<WebhookJobData, WebhookJobResult>;

/** One attempt under way: its job, the store's go-ahead, and its times on the `now` clock. */
interface Attempt {
  job: WebhookJob;
  token: string | undefined;
  start: Extract<AttemptStart, { kind: 'go' }>;
  /** When it began (the signature's timestamp). */
  startedAt: number;
  /** When the endpoint's answer (or its failure) came. */
  at: number;
}

/**
 * The processor of the `webhook-deliveries` queue; a job is one event's delivery. A job whose event
 * is not first in its key's line parks (delayed, holding no slot: DelayedError); a job whose event
 * has ended (delivered, dead, purged, or owned by another job) completes as skipped; otherwise it
 * POSTs the event signed. A 2xx delivers it; a 410, or a failure once `max_age_ms` has passed since
 * the event entered the queue, dead-letters it; any other failure is recorded and the job waits
 * out its backoff (DelayedError). A delivery that ends leaves the line and wakes the next event's
 * job. Delivery failures never fail the job. Unit tests call it directly with real jobs.
 */
export function webhookDeliveryProcessor(
  parts: WebhookDeliveryParts,
): Processor<WebhookJobData, WebhookJobResult> {
  return async (job, token, signal) => {
    const { event_id: eventId, query_key: key } = job.data;
    const startedAt = parts.now();
    const start = await parts.store.begin(eventId, job.id ?? '', key, startedAt);
    if (start.kind === 'waiting') {
      // Heals a line whose first event lost its job; a no-op otherwise.
      if (start.head !== undefined) await parts.jobs.wake(start.head);
      return park(parts, job, token);
    }
    if (start.kind !== 'go') {
      parts.logger.debug(
        { event_id: eventId, query_key: key, state: start.kind },
        'delivery job skipped',
      );
      return { outcome: 'skipped', reason: start.kind };
    }
    // Fresh timestamp and signature per attempt; the webhook-id stays the event id.
    const signed = parts.signer.sign(start.event, new Date(startedAt));
    const deadline = start.enqueuedAt + parts.maxAgeMs;
    const result = await post(parts, start, signed, signal, deadline);
    const attempt: Attempt = { job, token, start, startedAt, at: parts.now() };
    if (result.ok) return delivered(parts, attempt, result.status);
    if (!result.error.retryable || attempt.at >= deadline) {
      return deadLetter(parts, attempt, result.error);
    }
    return retryLater(parts, attempt, result.error, deadline);
  };
}

/**
 * Sends one attempt, under its `webhook.deliver` span when tracing is on (the request then carries
 * the span's `traceparent` when sampled); with tracing off, no span and no header.
 */
async function post(
  { client, spans, now }: WebhookDeliveryParts,
  start: Extract<AttemptStart, { kind: 'go' }>,
  signed: SignedWebhook,
  signal: AbortSignal | undefined,
  deadline: number,
): Promise<WebhookAttemptResult> {
  if (spans === undefined) return client.post(signed, signal);
  return spans.attempt(start.traceparent, start.attempt, async (span, traceparent) => {
    const result = await client.post(signed, signal, traceparent);
    if (result.ok) {
      endAttempt(span, { outcome: 'delivered', status: result.status });
    } else {
      const { error } = result;
      const dead = !error.retryable || now() >= deadline;
      endAttempt(span, {
        outcome: dead ? 'dead_lettered' : 'retried',
        status: error.status,
        errorCode: error.code,
      });
    }
    return result;
  });
}

/** Parks a job whose event waits for its key's previous one, until that one wakes it. */
async function park(
  { store, parkMs }: WebhookDeliveryParts,
  job: WebhookJob,
  token: string | undefined,
): Promise<never> {
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

/** What the log lines of an attempt name it by. */
function logFields({ job, start }: Attempt) {
  return { event_id: job.data.event_id, query_key: job.data.query_key, attempt: start.attempt };
}

/** A 2xx: the event leaves its line, and the next one's job is woken. */
async function delivered(
  { store, jobs, metrics, feeds, logger }: WebhookDeliveryParts,
  attempt: Attempt,
  status: number,
): Promise<WebhookJobResult> {
  const { job, start, at } = attempt;
  const { next, feed } = await store.delivered(job.data.event_id, job.data.query_key, at, status);
  metrics?.deliveries.inc({ channel: CHANNEL, outcome: 'delivered' });
  if (feed !== undefined) feeds?.count(feed, 'delivered');
  const seconds = updateToDeliverySeconds(start.event, at);
  if (seconds !== undefined) metrics?.updateToDelivery.observe({ channel: CHANNEL }, seconds);
  logger.info({ ...logFields(attempt), status, outcome: 'delivered' }, 'webhook delivered');
  if (next !== undefined) await jobs.wake(next);
  // The first success after failures: the endpoint answers again, so the deliveries waiting
  // out their backoff go now rather than when each backoff ends.
  if (await store.clearFailing()) {
    const resumed = await jobs.resume();
    logger.info({ resumed }, 'webhook endpoint answers again: waiting deliveries resumed');
  }
  return { outcome: 'delivered', status, attempt: start.attempt };
}

/**
 * Gives up (a 410, or `max_age_ms` past): the event leaves its line as a dead letter, in one step,
 * and the next one's job is woken.
 */
async function deadLetter(
  { store, jobs, deadLetters, metrics, logger }: WebhookDeliveryParts,
  attempt: Attempt,
  error: WebhookDeliveryError,
): Promise<WebhookJobResult> {
  const { job, start, startedAt, at } = attempt;
  const { next } = await store.dead(
    job.data.event_id,
    job.data.query_key,
    at,
    (multi) =>
      deadLetters.stage(multi, {
        event: start.event,
        channel: CHANNEL,
        last_error: lastError(error),
        attempts: start.attempt,
        first_attempt_at: new Date(start.firstAttemptAt).toISOString(),
        last_attempt_at: new Date(startedAt).toISOString(),
        dead_lettered_at: new Date(at).toISOString(),
      }),
    lastError(error),
  );
  metrics?.deliveries.inc({ channel: CHANNEL, outcome: 'dead_lettered' });
  metrics?.deadLetters.inc({ channel: CHANNEL });
  if (next !== undefined) await jobs.wake(next);
  const reason = error.retryable ? 'max_age_exceeded' : 'endpoint_gone';
  logger.warn(
    {
      ...logFields(attempt),
      status: error.status ?? null,
      error_code: error.code,
      outcome: 'dead_lettered',
      reason,
    },
    'webhook delivery given up: dead-lettered',
  );
  return { outcome: 'dead_lettered', code: error.code, attempt: start.attempt };
}

/** A failure to retry: recorded, and the job waits out its backoff (never past `deadline`). */
async function retryLater(
  { store, metrics, logger, backoff, random, maxAgeMs }: WebhookDeliveryParts,
  attempt: Attempt,
  error: WebhookDeliveryError,
  deadline: number,
): Promise<never> {
  const { job, token, start, at } = attempt;
  // The last retry falls on the deadline rather than past it.
  const retryAt = Math.min(at + webhookRetryDelayMs(start.attempt, backoff, random), deadline);
  await store.recordFailure(job.data.event_id, lastError(error));
  metrics?.deliveries.inc({ channel: CHANNEL, outcome: 'retried' });
  logger.warn(
    {
      ...logFields(attempt),
      status: error.status ?? null,
      error_code: error.code,
      outcome: 'retried',
      retry_in_ms: retryAt - at,
    },
    'webhook attempt failed; retrying later',
  );
  // retryAt is on our clock; BullMQ promotes by the machine's: hand it the same wait on that one.
  await job.moveToDelayed(Date.now() + (retryAt - at), token);
  // After the move, so that a success elsewhere that clears the mark finds this job delayed.
  await store.markFailing(at, maxAgeMs);
  throw new DelayedError();
}

/** `delivery.webhook.*`, with the URL and the secret the worker cannot do without. */
type WebhookSettings = DeliverySlice['delivery']['webhook'] & { url: string; secret: string[] };

/**
 * The worker's settings; a DeliveryConfigError without a URL or a secret, or for a plain http://
 * URL to another machine that `allow_plain_http` does not allow.
 */
function webhookSettingsOf(config: DeliverySlice): WebhookSettings {
  const webhook = config.delivery.webhook;
  const { url, secret } = webhook;
  if (url === null || secret === undefined || secret.length === 0) {
    throw new DeliveryConfigError('the webhook worker needs WEBHOOK_URL and WEBHOOK_SECRET');
  }
  const [plainHttp] = webhookTransportProblems(config);
  if (plainHttp !== undefined) throw new DeliveryConfigError(plainHttp.message);
  return { ...webhook, url, secret };
}

/** The parts but the queue's jobs, from the deps (a malformed secret throws here). */
function partsOf(
  deps: WebhookDeliveriesDeps,
  webhook: WebhookSettings,
): Omit<WebhookDeliveryParts, 'jobs'> {
  const { config, connection, prefix, logger, metrics, feeds, deadLetters } = deps;
  // The signer first: a malformed secret throws before anything else is made.
  return {
    signer: new WebhookSigner(webhook.secret),
    client: new WebhookClient({
      url: webhook.url,
      timeoutMs: webhook.timeout_ms,
      agent: outboundAgents(config.outbound),
    }),
    store: new WebhookDeliveryStore({
      redis: connection,
      prefix,
      keys: deps.keys,
      deadTtlS: config.delivery.dead_letters.retention_days * 86_400,
      traceTtlS: deliveryTraceTtlOf(config),
    }),
    deadLetters,
    logger,
    metrics,
    feeds,
    maxAgeMs: webhook.max_age_ms,
    backoff: {
      firstDelayMs: webhook.backoff.first_delay_ms,
      maxDelayMs: webhook.backoff.max_delay_ms,
      jitter: webhook.backoff.jitter,
    },
    parkMs: deps.parkMs ?? 300_000,
    now: deps.now ?? Date.now,
    random: deps.random ?? Math.random,
    spans:
      deps.tracing?.enabled === true
        ? new WebhookSpans(deps.tracing.tracer, webhook.url)
        : undefined,
  };
}

/** Logs the jobs that fail: unexpected errors only (Redis); delivery failures never fail a job. */
function logFailedJobs(worker: Worker<WebhookJobData, WebhookJobResult>, logger: Logger): void {
  worker.on('failed', (job, err) => {
    // The message of such an error names no payload; the event id and key identify the delivery.
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
}

/** `task`, its errors logged as `what` rather than thrown (for the timers). */
function logged(task: () => Promise<unknown>, logger: Logger, what: string): () => Promise<void> {
  return async () => {
    try {
      await task();
    } catch (err) {
      logger.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, what);
    }
  };
}

/** One probe, if the endpoint fails and this process has the turn (about one per `probeMs`). */
async function probeOnce(
  { store, jobs, logger }: WebhookDeliveryParts,
  probeMs: number,
): Promise<void> {
  if ((await store.isFailing()) && (await store.takeProbeTurn(probeMs))) {
    const eventId = await jobs.probe();
    if (eventId !== undefined) logger.debug({ event_id: eventId }, 'webhook endpoint probed');
  }
}

/**
 * Heals what crashes left behind, at start and then every `parkMs` (the recovery sweep). While the
 * endpoint fails, one waiting delivery is tried every `probeMs` (one worker process at a time; none
 * when 0); its success resumes the others (see `delivered`). The timers stop when the worker closes.
 */
async function startUpkeep(
  worker: Worker<WebhookJobData, WebhookJobResult>,
  parts: WebhookDeliveryParts,
  probeMs: number,
): Promise<void> {
  const { jobs, logger, parkMs } = parts;
  const sweep = logged(() => jobs.sweep(), logger, 'webhook recovery sweep failed');
  await sweep();
  const timer = setInterval(() => void sweep(), parkMs);
  timer.unref();
  const probe = logged(() => probeOnce(parts, probeMs), logger, 'webhook probe failed');
  const probeTimer = probeMs > 0 ? setInterval(() => void probe(), probeMs) : undefined;
  probeTimer?.unref();
  worker.on('closing', () => {
    clearInterval(timer);
    clearInterval(probeTimer);
  });
}

/**
 * The webhook delivery queue and its worker. A job is one event's delivery
 * ({@link webhookDeliveryProcessor}): it waits (parked, holding no slot) until its event is first
 * in its key's line, POSTs it signed, and on failure waits again for its backoff, until a 2xx, a
 * 410 or `max_age_ms` since the event entered the queue; then it leaves the line and wakes the
 * next event's job. A recovery sweep and, while the endpoint fails, a probe run beside it.
 */
export async function initWebhookDeliveriesWorker(deps: WebhookDeliveriesDeps): Promise<{
  name: string;
  queue: Queue<WebhookJobData>;
  worker: Worker<WebhookJobData, WebhookJobResult>;
  /** The partition's delivery state (read by `cw_webhook_oldest_retry_seconds`). */
  store: WebhookDeliveryStore;
}> {
  const { connection, prefix } = deps;
  const webhook = webhookSettingsOf(deps.config);
  const some = partsOf(deps, webhook);
  const telemetry = deps.tracing?.bullmqTelemetry;
  const traced = telemetry === undefined ? {} : { telemetry };
  const queue = new Queue<WebhookJobData>(WEBHOOK_DELIVERIES, { connection, prefix, ...traced });
  const parts: WebhookDeliveryParts = { ...some, jobs: new WebhookDeliveryJobs(queue, some.store) };
  const worker = new Worker<WebhookJobData, WebhookJobResult>(
    WEBHOOK_DELIVERIES,
    webhookDeliveryProcessor(parts),
    {
      connection,
      prefix,
      concurrency: webhook.concurrency,
      // A killed worker's job comes back after a lock period and may survive several crashes: the
      // store says where it was, so stalling is never fatal.
      maxStalledCount: 10,
      autorun: deps.autorun ?? true,
      ...traced,
    },
  );
  logFailedJobs(worker, deps.logger);
  await startUpkeep(worker, parts, webhook.probe_interval_ms);
  return { name: WEBHOOK_DELIVERIES, queue, worker, store: parts.store };
}
