import { once } from 'node:events';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { RedisClient } from '../../../../src/queues/redis-client.ts';
import { Registry } from 'prom-client';
import type { Config, PresetRule } from '../../../../src/config/config-schema.ts';
import { loadConfig } from '../../../../src/config/load-config.ts';
import type { Crosswalk } from '../../../../src/identity/crosswalk.ts';
import { App } from '../../../../src/app/compose-app.ts';
import { generateCrosswalkSecret } from '../../../../src/identity/crosswalk-keys.ts';
import { createLogger } from '../../../../src/observability/logger.ts';
import type { PatientAdmin } from '../../../../src/privacy/patient-admin.ts';
import type { PresetStore } from '../../../../src/presets/preset-store.ts';
import { requestConnection } from '../../../../src/queues/redis-connections.ts';
import type { RecordStore } from '../../../../src/records/record-store.ts';
import { isolatedRedis, testRedisUrl } from '../../../support/redis.ts';
import { dueQueries, type DueEntry } from '../../../support/ingest-stack.ts';

export const TOKEN = 'ingest-test-token-0123456789';
export const OTHER_TOKEN = 'ingest-other-token-0123456789';
export const AUTH = { authorization: `Bearer ${TOKEN}` };
export const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };

export interface HarnessOptions {
  rules?: PresetRule[];
  /** `INGEST_TOKENS`; `[]` for none. @defaultValue [TOKEN, OTHER_TOKEN] */
  tokens?: string[];
  bodyLimitBytes?: number;
  /** `ingest.batch`. @defaultValue the configuration's (1,000 items, 16 MiB) */
  batch?: { max_items: number; max_bytes: number };
  /** `ingest.crosswalk_cache.max_entries`. @defaultValue the configuration's */
  crosswalkCacheEntries?: number;
  /** Let the app build its default registry (default process metrics) instead of passing one. */
  defaultRegistry?: boolean;
  /** Where the app's and the queue's request connections point. @defaultValue the test Redis */
  redisUrl?: string;
  /** The app logger's level. @defaultValue 'trace' */
  logLevel?: 'trace' | 'info' | 'warn';
  /** `ADMIN_TOKENS`. @defaultValue none */
  adminTokens?: string[];
  /** `fhir.rest_hooks`. @defaultValue none */
  restHooks?: Config['fhir']['rest_hooks'];
  /** The runtime's readiness (`installReadinessGate`). @defaultValue none: always ready */
  isReady?: () => boolean;
}

export interface Harness {
  app: FastifyInstance;
  config: Config;
  prefix: string;
  /** The test's own connection, for inspecting Redis (not used by the app). */
  inspect: RedisClient;
  /** The app's request connection. */
  redis: RedisClient;
  crosswalk: Crosswalk;
  records: RecordStore;
  presets: PresetStore;
  /** The purge and opt-out the app serves (audit log included). */
  admin: PatientAdmin;
  registry: Registry;
  /** The due set: the queries ingest opened, soonest first. */
  due(): Promise<DueEntry[]>;
  /** Keys under the prefix that did not exist when the app was built (BullMQ writes some). */
  newKeys(): Promise<string[]>;
  /** Every log line the app wrote. */
  logLines: string[];
  close(): Promise<void>;
}

/** For errors a test provokes on purpose (a down Redis). */
const ignore = (): void => undefined;

/** Collects pino's output line by line, as the lines a log shipper would see. */
function lineCollector(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
}

/**
 * The ingest app built by the composition root as `ingest` builds it, on real Redis under the
 * test's own prefix and a fresh crosswalk key: real crosswalk, record store, presets, the
 * committer that writes record and queries in one script, and the patient admin.
 */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const env = await isolatedRedis();
  const tokens = options.tokens ?? [TOKEN, OTHER_TOKEN];
  const loaded = loadConfig({
    env: {
      INGEST_TOKENS: tokens.join(','),
      ADMIN_TOKENS: (options.adminTokens ?? []).join(','),
      REDIS_PREFIX: env.prefix,
      LOG_LEVEL: 'trace',
      CROSSWALK_KEY: generateCrosswalkSecret(),
    },
  });
  const config: Config = {
    ...loaded,
    ingest: {
      ...loaded.ingest,
      ...(options.bodyLimitBytes === undefined ? {} : { body_limit_bytes: options.bodyLimitBytes }),
      ...(options.batch === undefined ? {} : { batch: options.batch }),
      ...(options.crosswalkCacheEntries === undefined
        ? {}
        : { crosswalk_cache: { max_entries: options.crosswalkCacheEntries } }),
    },
    presets: { ...loaded.presets, rules: options.rules ?? [] },
    fhir: { ...loaded.fhir, rest_hooks: options.restHooks ?? loaded.fhir.rest_hooks },
  };
  const url = options.redisUrl ?? testRedisUrl();
  const redis = requestConnection(url, 'ingest-test');
  // A down Redis is part of some tests: its connection errors are expected, not to be printed.
  redis.on('error', ignore);

  if (options.redisUrl === undefined) {
    // Request connections queue nothing while connecting: a request sent before they are ready is
    // answered 503, as it should be, so the tests wait as the runtime does before serving.
    if (redis.status !== 'ready') await once(redis, 'ready');
  }

  const prefix = config.redis.prefix;
  const registry = new Registry();
  const logLines: string[] = [];
  const logger = createLogger({
    name: 'ingest',
    level: options.logLevel ?? 'trace',
    destination: lineCollector(logLines),
  });
  // Built as `ingest` builds it (src/runtime/run-ingest.ts), on the test's connection.
  const composed = App.compose(config, logger, {
    redis,
    ...(options.defaultRegistry === true ? {} : { registry }),
  });
  // The query queues, as the purge sees them (the workers' jobs of the patient are removed).
  const queues = composed.queriesQueues(redis);
  for (const queue of queues) queue.on('error', ignore);
  if (options.redisUrl === undefined) await Promise.all(queues.map((q) => q.waitUntilReady()));
  const patientAdmin = composed.patientAdmin(queues);
  const { admin } = patientAdmin;
  const { crosswalk, records, presets } = composed;
  const app = await composed.ingestApp({
    ...composed.ingestParts(),
    admin,
    ...(options.isReady === undefined ? {} : { isReady: options.isReady }),
  });
  await app.ready();
  const baseline = new Set(await env.redis.keys(`${prefix}*`));

  return {
    app,
    config,
    prefix,
    inspect: env.redis,
    redis,
    crosswalk,
    records,
    presets,
    admin,
    registry: composed.metrics,
    logLines,
    due: () => dueQueries(env.redis, prefix),
    async newKeys() {
      return (await env.redis.keys(`${prefix}*`)).filter((key) => !baseline.has(key));
    },
    async close() {
      await app.close();
      redis.disconnect();
      await patientAdmin.close().catch(ignore);
      await Promise.all(queues.map((queue) => queue.close().catch(ignore)));
      await env.cleanup();
    },
  };
}

/** Every key under the prefix with its whole content, whatever the type, as text. */
export async function dumpRedis(redis: RedisClient, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of await redis.keys(`${prefix}*`)) {
    const type = await redis.type(key);
    let content: unknown;
    if (type === 'string') content = await redis.get(key);
    else if (type === 'hash') content = await redis.hgetall(key);
    else if (type === 'list') content = await redis.lrange(key, 0, -1);
    else if (type === 'set') content = await redis.smembers(key);
    else if (type === 'zset') content = await redis.zrange(key, '0', '-1');
    else if (type === 'stream') content = await redis.xrange(key, '-', '+');
    else throw new Error(`dumpRedis: unexpected type ${type} of ${key}`);
    out.set(key, JSON.stringify(content));
  }
  return out;
}

/** The value of one series of a counter (0 when it has none yet). */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const metric = await registry.getSingleMetricAsString(name);
  const selector = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const series = selector === '' ? `${name} ` : `${name}{${selector}}`;
  const line = metric.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}
