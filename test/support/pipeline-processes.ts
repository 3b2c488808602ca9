import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { RedisClient } from '../../src/queues/redis-client.ts';
import type { ResultEvent } from '../../src/interface/result-event.ts';
import { generateCrosswalkSecret } from '../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../tools/cli-process.ts';
import { newOutboundKey, openedEvents, OUTBOUND_QUEUE_LINES } from './outbound.ts';
import { isolatedRedis, testRedisClient, testRedisEnv } from './redis.ts';

/** A request as the local service logged it. */
export interface LoggedRequest {
  method: string;
  path: string;
  status: number | null;
  body: unknown;
}

/**
 * Config lines of an end-to-end test of the clinical feeds: short debounce and polls, problem-list
 * presets on (the outpatient default category), no rules.
 */
export const FAST_FEED_PIPELINE_LINES: readonly string[] = [
  'queries:',
  '  debounce_ms: 200',
  '  poll: { first_delay_ms: 100, factor: 2, max_delay_ms: 400, jitter: 0.2, deadline_ms: 60000 }',
  'presets:',
  '  rules: []',
  '  from_problem_list: { enabled: true, categories: outpatient_default }',
];

export interface PipelineProcesses {
  simulator: CliProcess;
  start: CliProcess;
  simulatorUrl: string;
  ingestUrl: string;
  mllpPort: number;
  /** The API key the simulator accepts (also its admin key). */
  apiKey: string;
  /** A bearer token the ingester accepts. */
  token: string;
  /** The outbound results queue (events as the consumer takes them: `patient_id` sealed). */
  results: Queue;
  /** A connection of the test's own to the pipeline's Redis, and the pipeline's key prefix. */
  redis: RedisClient;
  prefix: string;
  /** The `OUTBOUND_KEY` the pipeline seals with. */
  outboundKey: string;
  /** The events of the outbound queue, opened with {@link outboundKey}. */
  delivered(): Promise<ResultEvent[]>;
  /** Everything the local service received. */
  requests(): Promise<LoggedRequest[]>;
  close(): Promise<void>;
}

/**
 * `concordance-worker simulator` and `concordance-worker start` as separate processes, configured
 * through the environment (as the README shows) and a config file of `configLines` (fast polls),
 * with the outbound queue on.
 */
export async function startPipelineProcesses(options: {
  apiKey: string;
  token: string;
  configLines: string[];
  latency?: string;
  /**
   * Where `start` finds Redis (e.g. a TcpProxy in front of it). @defaultValue the test Redis (the
   * test Redis Cluster in a cluster run)
   */
  redisUrl?: string;
  /** More environment for `start`. */
  env?: Record<string, string>;
  /**
   * The log line that means "go on": `ingest listening` (serving), or `ingest ports open` (the
   * ports answer, Redis may not yet). @defaultValue `ingest listening`
   */
  until?: 'ingest listening' | 'ingest ports open';
}): Promise<PipelineProcesses> {
  const { apiKey, token } = options;
  const redis = await isolatedRedis();
  const simulator = new CliProcess(
    ['simulator', '--port', '0', '--api-key', apiKey, '--latency', options.latency ?? '200-400'],
    {},
  );
  const simulatorUrl =
    /listening on (\S+)/.exec(await simulator.waitForLine('listening on'))?.[1] ?? '';
  const config = join(mkdtempSync(join(tmpdir(), 'cw-processes-')), 'config.yaml');
  writeFileSync(config, [...options.configLines, ...OUTBOUND_QUEUE_LINES].join('\n'));
  const outboundKey = newOutboundKey();
  const start = new CliProcess(['--config', config, 'start'], {
    ...(options.redisUrl === undefined ? testRedisEnv() : { REDIS_URL: options.redisUrl }),
    REDIS_PREFIX: redis.prefix,
    SERVICE_BASE_URL: simulatorUrl,
    SERVICE_API_KEY: apiKey,
    INGEST_TOKENS: token,
    CROSSWALK_KEY: generateCrosswalkSecret(),
    OUTBOUND_KEY: outboundKey,
    INGEST_PORT: '0',
    INGEST_HOST: '127.0.0.1',
    MLLP_PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'trace',
    ...options.env,
  });
  const listening = JSON.parse(await start.waitForLine(options.until ?? 'ingest listening')) as {
    url: string;
    mllp_port: number;
  };
  const results = new Queue('concordance-results', {
    connection: testRedisClient(),
    prefix: redis.prefix,
  });
  return {
    simulator,
    start,
    simulatorUrl,
    ingestUrl: listening.url,
    mllpPort: listening.mllp_port,
    apiKey,
    token,
    results,
    redis: redis.redis,
    prefix: redis.prefix,
    outboundKey,
    delivered: () => openedEvents(results, outboundKey),
    requests: async () =>
      (await (
        await fetch(`${simulatorUrl}/_admin/requests`, { headers: { 'x-admin-key': apiKey } })
      ).json()) as LoggedRequest[],
    async close() {
      await start.stop('SIGTERM');
      await simulator.stop('SIGTERM');
      await results.close();
      await redis.cleanup();
    },
  };
}
