import { randomUUID } from 'node:crypto';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterStore } from '../src/delivery/dead-letter-store.ts';
import { WebhookClient } from '../src/delivery/webhook-client.ts';
import {
  WEBHOOK_DELIVERIES,
  type WebhookJobData,
} from '../src/delivery/webhook-deliveries-queue.ts';
import { WebhookDeliveryJobs } from '../src/delivery/webhook-delivery-jobs.ts';
import { queryKeyOf, WebhookDeliveryStore } from '../src/delivery/webhook-delivery-store.ts';
import { WebhookSigner } from '../src/delivery/webhook-signer.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import type { ResultEvent } from '../src/interface/result-event.ts';
import { PipelineMetrics } from '../src/observability/pipeline-metrics.ts';
import type { RedisClient } from '../src/queues/redis-client.ts';
import { makeEvent, newSecret } from '../test/integration/delivery/delivery-fixture.ts';
import { captureLogs, type LogCapture } from '../test/support/log-capture.ts';
import { isolatedRedis } from '../test/support/redis.ts';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../tools/webhook-receiver.ts';
import {
  webhookDeliveryProcessor,
  type WebhookDeliveryParts,
  type WebhookJobResult,
} from './webhook-deliveries.ts';

type WebhookJob = Job<WebhookJobData, WebhookJobResult>;

/** The wait after a first failed attempt: no jitter, so the retry's delay is exact. */
const FIRST_DELAY_MS = 60_000;
/** Within the 5 minutes receivers allow a timestamp, so that an attempt at the deadline verifies. */
const MAX_AGE_MS = 120_000;

/**
 * The processor of the `webhook-deliveries` queue, called directly with real BullMQ jobs: each
 * event is handed over as the webhook channel does it (its key's line in a real delivery store,
 * its job added by WebhookDeliveryJobs to a real queue on the test's prefix) and its job taken
 * (made active, locked with a token) by a real worker that does not run by itself. The endpoint is
 * a real HTTP server on a free port that verifies the signatures and answers what each test says.
 */
describe('webhookDeliveryProcessor (real BullMQ jobs, real Redis, a real receiver)', () => {
  let redis: RedisClient;
  let cleanup: () => Promise<void>;
  let secret: string;
  let receiver: WebhookReceiver;
  /** What the receiver answers a verified request with. */
  let answer: (attempt: Omit<ReceivedAttempt, 'status'>) => number;
  let store: WebhookDeliveryStore;
  let queue: Queue<WebhookJobData>;
  let jobs: WebhookDeliveryJobs;
  let deadLetters: DeadLetterStore;
  let worker: Worker<WebhookJobData, WebhookJobResult>;
  let metrics: PipelineMetrics;
  let logs: LogCapture;
  /** The processor's clock (`now`), near the machine's: receivers refuse old timestamps. */
  let clock: number;

  beforeEach(async () => {
    const isolated = await isolatedRedis();
    const { prefix } = isolated;
    redis = isolated.redis;
    cleanup = isolated.cleanup;
    secret = newSecret();
    answer = () => 204;
    receiver = await startWebhookReceiver({ secret, respond: (attempt) => answer(attempt) });
    const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
    store = new WebhookDeliveryStore({ redis, prefix, keys });
    queue = new Queue(WEBHOOK_DELIVERIES, { connection: redis, prefix });
    jobs = new WebhookDeliveryJobs(queue, store);
    deadLetters = new DeadLetterStore({ redis, prefix, keys });
    worker = new Worker(WEBHOOK_DELIVERIES, null, { connection: redis, prefix, autorun: false });
    metrics = new PipelineMetrics(new Registry());
    logs = captureLogs();
    clock = Date.now();
  });
  afterEach(async () => {
    await worker.close(true);
    await queue.close();
    await receiver.close();
    await cleanup();
  });

  const parts = (): WebhookDeliveryParts => ({
    store,
    jobs,
    client: new WebhookClient({ url: receiver.url }),
    signer: new WebhookSigner(secret),
    deadLetters,
    logger: logs.logger,
    metrics,
    maxAgeMs: MAX_AGE_MS,
    backoff: { firstDelayMs: FIRST_DELAY_MS, maxDelayMs: 3_600_000, jitter: 0 },
    parkMs: 300_000,
    now: () => clock,
    random: () => 0.5,
  });
  const processor = () => webhookDeliveryProcessor(parts());

  /** Hands `event` over as the webhook channel does: its key's line, then its job. */
  async function handOver(event: ResultEvent): Promise<void> {
    const { state, job } = await store.enqueue(event, clock);
    expect(state).toBe('new');
    await jobs.add(event.id, queryKeyOf(event), job);
  }

  /** Takes the next waiting job as the worker would (active, locked); it must be `eventId`'s. */
  async function take(eventId: string): Promise<{ job: WebhookJob; token: string }> {
    const token = randomUUID();
    const job = await worker.getNextJob(token, { block: false });
    expect(job?.data.event_id).toBe(eventId);
    expect(await job?.getState()).toBe('active');
    return { job: job as WebhookJob, token };
  }

  /** What the processor throws for the job (it must throw). */
  async function thrownBy({ job, token }: { job: WebhookJob; token: string }): Promise<Error> {
    const error = await processor()(job, token).then(
      (result) => new Error(`resolved ${JSON.stringify(result)}`),
      (err: unknown) => err as Error,
    );
    expect(error.message).not.toMatch(/^resolved /);
    return error;
  }

  const run = ({ job, token }: { job: WebhookJob; token: string }) => processor()(job, token);

  async function counted(outcome: string): Promise<number> {
    const { values } = await metrics.deliveries.get();
    return values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  }

  it('delivers on a 2xx: returns the status and the attempt, and the event leaves its line', async () => {
    answer = () => 200;
    const event = makeEvent();
    await handOver(event);
    const taken = await take(event.id);

    expect(await run(taken)).toEqual({ outcome: 'delivered', status: 200, attempt: 1 });
    expect(receiver.attempts.map((a) => [a.webhookId, a.status])).toEqual([[event.id, 200]]);
    expect(receiver.events[0]?.payload).toEqual(event);
    expect((await store.state(event.id))?.state).toBe('delivered');
    expect(await store.line(queryKeyOf(event))).toEqual([]);
    expect(await counted('delivered')).toBe(1);

    // As the worker does with it: completed (and removed, per WEBHOOK_JOB_OPTIONS).
    await taken.job.moveToCompleted(
      { outcome: 'delivered', status: 200, attempt: 1 },
      taken.token,
      false,
    );
    expect(await queue.getJob(taken.job.id as string)).toBeUndefined();
  });

  it("signs the body per Standard Webhooks with the secret, as WebhookSigner's scheme says", async () => {
    const event = makeEvent();
    await handOver(event);
    await run(await take(event.id));

    const [sent] = receiver.attempts;
    if (sent === undefined) throw new Error('no request arrived');
    // The receiver checked it with the reference verifier, on the raw body.
    expect(sent.verified).toBe(true);
    const headers = {
      'webhook-id': sent.webhookId,
      'webhook-timestamp': sent.timestamp,
      'webhook-signature': sent.signature,
    };
    expect(new Webhook(secret).verify(sent.rawBody, headers)).toEqual(event);
    expect(() => new Webhook(newSecret()).verify(sent.rawBody, headers)).toThrow();
    // The webhook-id is the event id; the timestamp the attempt's start on the processor's clock;
    // the signature HMAC-SHA256 over `id.timestamp.body`, exactly as WebhookSigner makes it.
    expect(sent.webhookId).toBe(event.id);
    expect(sent.timestamp).toBe(String(Math.floor(clock / 1000)));
    const signed = new WebhookSigner(secret).sign(
      JSON.parse(sent.rawBody) as ResultEvent,
      new Date(clock),
    );
    expect(signed.body).toBe(sent.rawBody);
    expect(sent.signature).toBe(signed.headers['webhook-signature']);
    expect(sent.headers['content-type']).toBe('application/json');
  });

  it('dead-letters at once on a 410: the letter is kept and the event leaves its line', async () => {
    answer = () => 410;
    const event = makeEvent();
    await handOver(event);

    expect(await run(await take(event.id))).toEqual({
      outcome: 'dead_lettered',
      code: 'ERR_WEBHOOK_GONE',
      attempt: 1,
    });
    expect(receiver.attempts).toHaveLength(1);
    const at = new Date(clock).toISOString();
    expect(await deadLetters.get(event.id)).toEqual({
      event,
      channel: 'webhook',
      last_error: {
        code: 'ERR_WEBHOOK_GONE',
        status: 410,
        message: 'the endpoint answered 410 Gone',
      },
      attempts: 1,
      first_attempt_at: at,
      last_attempt_at: at,
      dead_lettered_at: at,
    });
    expect(await deadLetters.count()).toBe(1);
    expect((await store.state(event.id))?.state).toBe('dead');
    expect(await store.line(queryKeyOf(event))).toEqual([]);
    expect(await counted('dead_lettered')).toBe(1);
    const { values } = await metrics.deadLetters.get();
    expect(values.map((v) => v.value)).toEqual([1]);
  });

  it('records a 5xx and delays the job for its backoff (DelayedError), the event still first', async () => {
    answer = () => 503;
    const event = makeEvent();
    await handOver(event);
    const taken = await take(event.id);
    const error = await thrownBy(taken);

    expect(error).toBeInstanceOf(DelayedError);
    expect(await taken.job.getState()).toBe('delayed');
    // Not a failed attempt for BullMQ: the delivery's attempts are the store's.
    expect((await queue.getJob(taken.job.id as string))?.attemptsMade).toBe(0);
    expect(await store.state(event.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      firstAttemptAt: clock,
      lastAttemptAt: clock,
      lastError: { code: 'ERR_WEBHOOK_STATUS', status: 503, message: 'the endpoint answered 503' },
    });
    expect(await store.line(queryKeyOf(event))).toEqual([event.id]);
    expect(await store.isFailing()).toBe(true);
    expect(await deadLetters.count()).toBe(0);
    expect(await counted('retried')).toBe(1);
    // The backoff's first delay, without jitter.
    expect(
      await logs.waitFor((e) => e.event_id === event.id && e.outcome === 'retried'),
    ).toMatchObject({ attempt: 1, status: 503, retry_in_ms: FIRST_DELAY_MS });
  });

  it('dead-letters a failure once max_age_ms has passed since the event entered the queue', async () => {
    answer = () => 503;
    const event = makeEvent();
    await handOver(event);
    const enqueuedAt = clock;
    const first = await take(event.id);
    expect(await thrownBy(first)).toBeInstanceOf(DelayedError);

    // The retry, run now rather than after its backoff, on a clock at the deadline.
    await first.job.promote();
    clock = enqueuedAt + MAX_AGE_MS;
    expect(await run(await take(event.id))).toEqual({
      outcome: 'dead_lettered',
      code: 'ERR_WEBHOOK_STATUS',
      attempt: 2,
    });
    expect(receiver.attempts.map((a) => a.status)).toEqual([503, 503]);
    expect(await deadLetters.get(event.id)).toMatchObject({
      last_error: { code: 'ERR_WEBHOOK_STATUS', status: 503 },
      attempts: 2,
      first_attempt_at: new Date(enqueuedAt).toISOString(),
      last_attempt_at: new Date(clock).toISOString(),
    });
    expect(
      await logs.waitFor((e) => e.event_id === event.id && e.outcome === 'dead_lettered'),
    ).toMatchObject({ reason: 'max_age_exceeded', attempt: 2 });
  });

  it("parks a job whose event is not first in its key's line; the first one's delivery wakes it", async () => {
    const first = makeEvent();
    const second = makeEvent();
    expect(queryKeyOf(second)).toBe(queryKeyOf(first));
    await handOver(first);
    await handOver(second);
    const firstJob = await take(first.id);
    const secondJob = await take(second.id);

    const error = await thrownBy(secondJob);
    expect(error).toBeInstanceOf(DelayedError);
    expect(await secondJob.job.getState()).toBe('delayed');
    // Parked without an attempt: nothing was sent or counted.
    expect(receiver.attempts).toEqual([]);
    expect((await store.state(second.id))?.attempts).toBe(0);
    expect(await store.line(queryKeyOf(first))).toEqual([first.id, second.id]);

    // The first event's delivery wakes the parked job at once, which then delivers in turn.
    expect(await run(firstJob)).toMatchObject({ outcome: 'delivered', attempt: 1 });
    expect(await secondJob.job.getState()).toBe('waiting');
    expect(await run(await take(second.id))).toMatchObject({ outcome: 'delivered', attempt: 1 });
    expect(receiver.events.map((e) => e.webhookId)).toEqual([first.id, second.id]);
  });

  it('skips a job whose event was already delivered, sending nothing', async () => {
    const event = makeEvent();
    await handOver(event);
    const taken = await take(event.id);
    const result = await run(taken);
    expect(result).toMatchObject({ outcome: 'delivered' });
    await taken.job.moveToCompleted(result, taken.token, false);

    // A job of the delivered event again, under the id the store keeps for it.
    const kept = await store.state(event.id);
    expect(kept?.state).toBe('delivered');
    await jobs.add(event.id, queryKeyOf(event), kept?.job ?? '');
    expect(await run(await take(event.id))).toEqual({ outcome: 'skipped', reason: 'delivered' });
    expect(receiver.attempts).toHaveLength(1);
    expect(await counted('delivered')).toBe(1);
  });
});
