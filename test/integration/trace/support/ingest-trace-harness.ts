import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { App } from '../../../../src/app/compose-app.ts';
import type { Config } from '../../../../src/config/config-schema.ts';
import { startMllpServer, type MllpServer } from '../../../../src/ingest/hl7v2/mllp-server.ts';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { requestConnection } from '../../../../src/queues/redis-connections.ts';
import type { MessageReceipt } from '../../../../src/trace/message-trace.ts';
import { MessageReceiptSchema } from '../../../../src/trace/message-trace.ts';
import { captureLogs, type LogCapture } from '../../../support/log-capture.ts';
import { isolatedIngestConfig } from '../../../support/ingest-test-config.ts';
import { testRedisUrl } from '../../../support/redis.ts';
import { redisKeys } from '../../../support/scan-redis.ts';

export const TOKEN = 'trace-test-token-0123456789';

/** A preset every update runs (a rule without `when_changes`): each stored message queues it. */
export const RULE_CATEGORY = 'END002';

export interface TraceHarness {
  config: Config;
  app: FastifyInstance;
  mllp: MllpServer;
  composed: App;
  registry: Registry;
  logs: LogCapture;
  prefix: string;
  inspect: RedisClient;
  /** The receipts under a control id, oldest first, wherever its partition. */
  receipts(controlId: string): Promise<MessageReceipt[]>;
  /** Every key under the test prefix whose name holds `:trace:`. */
  traceKeys(): Promise<string[]>;
  /** `cw_feed_messages_total{feed, stage}`. */
  feedCount(feed: string, stage: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * The ingest as `ingest` builds it (composition root), on real Redis under a test prefix, with a
 * fresh crosswalk key, the MLLP server on a free port, `trace.*` as given and one preset rule.
 */
export async function startTraceHarness(
  options: { trace?: Partial<Config['trace']>; fhir?: Partial<Config['fhir']> } = {},
): Promise<TraceHarness> {
  const { env, loaded } = await isolatedIngestConfig(TOKEN);
  const config: Config = {
    ...loaded,
    hl7v2: { ...loaded.hl7v2, mllp: { ...loaded.hl7v2.mllp, host: '127.0.0.1' } },
    fhir: { ...loaded.fhir, ...options.fhir },
    presets: { ...loaded.presets, rules: [{ ccsr_category: RULE_CATEGORY }] },
    terminology: { ...loaded.terminology, sources: [] },
    trace: { ...loaded.trace, ...options.trace },
  };
  const redis = requestConnection(testRedisUrl(), 'trace-test');
  redis.on('error', () => undefined);
  if (redis.status !== 'ready') await once(redis, 'ready');
  const registry = new Registry();
  const logs = captureLogs('trace');
  const composed = App.compose(config, logs.logger, { redis, registry });
  const parts = composed.ingestParts();
  const mllp = await startMllpServer({
    config: config.hl7v2,
    updates: parts.updates,
    registry,
    logger: logs.logger,
    port: 0,
  });
  const app = await composed.ingestApp(parts);
  await app.ready();
  const inspect = env.redis;
  const prefix = env.prefix;
  return {
    config,
    app,
    mllp,
    composed,
    registry,
    logs,
    prefix,
    inspect,
    async receipts(controlId) {
      const keys = (await redisKeys(inspect, prefix)).filter((key) =>
        key.endsWith(`:trace:m:${controlId}`),
      );
      const items = (await Promise.all(keys.map((key) => inspect.lrange(key, 0, -1)))).flat();
      return items.map((item) => MessageReceiptSchema.parse(JSON.parse(item)));
    },
    async traceKeys() {
      return (await redisKeys(inspect, prefix)).filter((key) => key.includes(':trace:'));
    },
    async feedCount(feed, stage) {
      const metric = await registry.getSingleMetric('cw_feed_messages_total')?.get();
      const value = metric?.values.find((v) => v.labels.feed === feed && v.labels.stage === stage);
      return value?.value ?? 0;
    },
    async close() {
      await mllp.close();
      await app.close();
      redis.disconnect();
      await env.cleanup();
    },
  };
}
