import { randomBytes, randomUUID } from 'node:crypto';
import type { RedisClient } from '../../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import type { Config } from '../../../src/config/config-schema.ts';
import { loadConfig } from '../../../src/config/load-config.ts';
import { App } from '../../../src/app/compose-app.ts';
import type { DeliveryRouting } from '../../../src/delivery/create-delivery-router.ts';
import { DeadLetterStore } from '../../../src/delivery/dead-letter-store.ts';
import type { ResultEvent } from '../../../src/interface/result-event.ts';
import { WebhookChannel } from '../../../src/delivery/webhook-channel.ts';
import {
  deriveCrosswalkKeys,
  generateCrosswalkSecret,
  type CrosswalkKeys,
} from '../../../src/identity/crosswalk-keys.ts';
import type { PipelineMetrics } from '../../../src/observability/pipeline-metrics.ts';
import { workerConnection } from '../../../src/queues/redis-connections.ts';
import { captureLogs, type LogCapture } from '../../support/log-capture.ts';
import { newOutboundKey } from '../../support/outbound.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../../../tools/webhook-receiver.ts';

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** Fast retries: 50 ms first, capped at 400 ms. */
export function deliveryConfig(
  url: string,
  secret: string,
  delivery: {
    only_changed?: boolean;
    outbound_queue?: boolean;
    max_age_ms?: number;
    /** @defaultValue 50 ms first, capped at 400 ms */
    backoff?: Config['delivery']['webhook']['backoff'];
    /** @defaultValue 0 (no probe) */
    probe_interval_ms?: number;
  } = {},
): Config {
  const config = loadConfig({
    env: { WEBHOOK_URL: url, WEBHOOK_SECRET: secret, OUTBOUND_KEY: newOutboundKey() },
  });
  return {
    ...config,
    delivery: {
      ...config.delivery,
      only_changed: delivery.only_changed ?? false,
      outbound_queue: {
        ...config.delivery.outbound_queue,
        enabled: delivery.outbound_queue ?? false,
      },
      webhook: {
        ...config.delivery.webhook,
        backoff: delivery.backoff ?? { first_delay_ms: 50, max_delay_ms: 400, jitter: 0.2 },
        max_age_ms: delivery.max_age_ms ?? 60_000,
        probe_interval_ms: delivery.probe_interval_ms ?? 0,
      },
    },
  };
}

let clock = Date.parse('2026-11-02T08:00:00.000Z');

/** A result event as the query worker makes them; each call is a little newer than the last. */
export function makeEvent(overrides: Partial<ResultEvent> = {}): ResultEvent {
  clock += 1_000;
  return {
    id: randomUUID(),
    type: 'concordance.completed',
    created_at: new Date(clock).toISOString(),
    patient_id: 'MRN-0001',
    patient_service_id: 'psid-0001',
    ccsr_category: 'END002',
    record_version: 1,
    triggered_by: {
      event_ids: ['evt-1'],
      count: 1,
      first_update_at: new Date(clock - 500).toISOString(),
      last_update_at: new Date(clock - 500).toISOString(),
    },
    remote_job_id: `job-${clock}`,
    status: 'completed',
    concordance: { concordant: true, guidelines: [{ id: 'ADA-2026-9.1', met: true }] },
    error: null,
    ...overrides,
  };
}

/**
 * The webhook path on an isolated Redis prefix: a real receiver, the router (with change
 * detection), and one or more webhook workers, with logs and metrics captured.
 */
export class DeliveryFixture {
  /** The composition root the router and the webhook workers come from. */
  readonly app: App;
  readonly secret: string;
  readonly receiver: WebhookReceiver;
  readonly config: Config;
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly logs: LogCapture;
  readonly metrics: PipelineMetrics;
  readonly registry: Registry;
  readonly routing: DeliveryRouting;
  readonly deadLetters: DeadLetterStore;
  /** The crosswalk keys events rest sealed with, and the CROSSWALK_KEY they come from. */
  readonly keys: CrosswalkKeys;
  readonly crosswalkSecret: string;
  readonly #closers: (() => Promise<unknown>)[];

  private constructor(parts: {
    app: App;
    secret: string;
    receiver: WebhookReceiver;
    config: Config;
    redis: RedisClient;
    prefix: string;
    logs: LogCapture;
    routing: DeliveryRouting;
    deadLetters: DeadLetterStore;
    keys: CrosswalkKeys;
    crosswalkSecret: string;
    closers: (() => Promise<unknown>)[];
  }) {
    this.keys = parts.keys;
    this.app = parts.app;
    this.crosswalkSecret = parts.crosswalkSecret;
    this.secret = parts.secret;
    this.receiver = parts.receiver;
    this.config = parts.config;
    this.redis = parts.redis;
    this.prefix = parts.prefix;
    this.logs = parts.logs;
    this.registry = parts.app.metrics;
    this.metrics = parts.app.pipelineMetrics;
    this.routing = parts.routing;
    this.deadLetters = parts.deadLetters;
    this.#closers = parts.closers;
  }

  static async start(
    options: {
      respond?: (attempt: Omit<ReceivedAttempt, 'status'>) => number;
      delivery?: Parameters<typeof deliveryConfig>[2];
      /** How many webhook workers to start. @defaultValue 1 */
      workers?: number;
      /**
       * What WEBHOOK_SECRET holds, as the environment gives it (several secrets separated by spaces
       * or commas); the receiver verifies with `secret`. @defaultValue `secret`
       */
      webhookSecret?: string;
      /** The receiver's secret. @defaultValue a new one */
      secret?: string;
    } = {},
  ): Promise<DeliveryFixture> {
    const secret = options.secret ?? newSecret();
    const receiver = await startWebhookReceiver({ secret, respond: options.respond });
    const config = deliveryConfig(receiver.url, options.webhookSecret ?? secret, options.delivery);
    const isolated = await isolatedRedis();
    const { redis, prefix } = isolated;
    const logs = captureLogs();
    const crosswalkSecret = generateCrosswalkSecret();
    const keys = deriveCrosswalkKeys(crosswalkSecret);
    // The delivery side as `work` builds it, under the test's own prefix.
    const app = App.compose({ ...config, redis: { ...config.redis, prefix } }, logs.logger, {
      redis,
      keys,
      registry: new Registry(),
    });
    const routing = app.deliveryRouter(redis);
    const deadLetters = new DeadLetterStore({ redis, prefix, keys });
    const fixture = new DeliveryFixture({
      app,
      secret,
      receiver,
      config: app.config,
      redis,
      prefix,
      logs,
      routing,
      deadLetters,
      keys,
      crosswalkSecret,
      closers: [() => routing.close(), () => receiver.close(), () => isolated.cleanup()],
    });
    for (let i = 0; i < (options.workers ?? 1); i++) await fixture.startWorker();
    return fixture;
  }

  /** A webhook worker on its own connection, as a separate worker process would have. */
  async startWorker(): Promise<void> {
    const connection = workerConnection(testRedisUrl(), 'test-webhook-worker');
    const { worker, queue } = await this.app.webhookDeliveries(connection, 0, this.logs.logger);
    this.#closers.unshift(async () => {
      await worker.close();
      await queue.close();
      connection.disconnect();
    });
  }

  get webhook(): WebhookChannel {
    const channel = this.routing.channels.find((c) => c instanceof WebhookChannel);
    if (!(channel instanceof WebhookChannel)) throw new Error('the webhook channel is off');
    return channel;
  }

  /** Hands events to the router one after the other, as the query worker does. */
  async deliver(...events: ResultEvent[]): Promise<void> {
    for (const event of events) await this.routing.router.deliver(event);
  }

  /** Resolves once every event id has been acknowledged by the receiver. */
  async untilReceived(...ids: string[]): Promise<void> {
    await this.receiver.until((r) => ids.every((id) => r.events.some((e) => e.webhookId === id)));
  }

  /** Resolves once the worker has logged the outcome of `id` (after its state is stored). */
  async untilOutcome(id: string, outcome: 'delivered' | 'dead_lettered'): Promise<void> {
    await this.logs.waitFor((e) => e.event_id === id && e.outcome === outcome);
  }

  attemptsOf(id: string): ReceivedAttempt[] {
    return this.receiver.attempts.filter((a) => a.webhookId === id);
  }

  async counter(name: string, labels: Record<string, string>): Promise<number> {
    const metric = (await this.registry.getMetricsAsJSON()).find((m) => m.name === name);
    const values = (metric?.values ?? []) as { labels: Record<string, unknown>; value: number }[];
    return values
      .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
      .reduce((sum, v) => sum + v.value, 0);
  }

  async close(): Promise<void> {
    for (const close of this.#closers.splice(0)) await close();
  }
}
