import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../../src/config/config-schema.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { slotOf } from '../../src/queues/partitions.ts';
import { scanTargets } from '../../src/queues/redis-client.ts';
import { workerConnection } from '../../src/queues/redis-connections.ts';
import { App } from '../../src/app/compose-app.ts';
import { startLocalRedisCluster } from '../../tools/local-redis-cluster.ts';
import {
  benchPrefix,
  benchRecord,
  CATEGORY,
  configFor,
  forEachLimit,
  simulatorStats,
  startBenchSimulator,
  startWorker,
  until,
  workerEnv,
  writeConfig,
  type BenchContext,
} from '../support/fixtures.ts';
import { clearRedis } from '../support/processes.ts';
import { round } from '../support/stats.ts';

export interface ClusterSettings {
  queries: number;
  /** Worker concurrency in all: one partition gets all of it, three partitions a third each. */
  concurrency: number;
  partitions: number;
}

export const DEFAULT_CLUSTER: ClusterSettings = { queries: 3_000, concurrency: 48, partitions: 3 };

/** One run: where, how fast, and how Redis's commands fell on its servers. */
export interface ClusterRun {
  setup: string;
  partitions: number;
  concurrency_per_partition: number;
  queries: number;
  seconds: number;
  queries_per_s: number | null;
  remote_jobs_submitted: number;
  /** Commands each server (master) ran during the run (INFO commandstats calls, after - before). */
  commands_by_node: { node: string; partitions: number[]; calls: number; share: number | null }[];
  commands_per_query: number | null;
}

export interface ClusterResult {
  settings: ClusterSettings & { queries_config: object; setup: string };
  single: ClusterRun;
  cluster: ClusterRun;
  /** Cluster queries per second / single Redis queries per second (same run). */
  ratio: number | null;
}

const QUERIES_CONFIG = {
  debounce_ms: 10,
  poll: { first_delay_ms: 10, factor: 2, max_delay_ms: 100, jitter: 0.2, deadline_ms: 600_000 },
};

/** The partitions whose slot `server` serves (all of them on a server that is no cluster node). */
async function partitionsOn(
  server: Redis,
  prefixes: readonly string[],
  count: number,
): Promise<number[]> {
  const info = await server.info('cluster');
  if (!/cluster_enabled:1/.test(info)) return Array.from({ length: count }, (_, p) => p);
  const own = (await server.cluster('SLOTS')).filter(
    ([, , master]) => master?.[1] === server.options.port,
  );
  return prefixes.flatMap((prefix, p) => {
    const slot = slotOf(prefix);
    return own.some(([from, to]) => slot >= from && slot <= to) ? [p] : [];
  });
}

/** Total `calls` of INFO commandstats. */
async function commandCalls(server: Redis): Promise<number> {
  const info = await server.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

/**
 * The pipeline scenario's run (one query per patient, zero-latency service, results counted in the
 * outbound queue) on `redis`: a `concordance-worker work` child with `partitions` and the
 * connection settings in `env`; INFO commandstats of each master are read before the queries are
 * scheduled and once every result is in (no CONFIG RESETSTAT: a shared Redis keeps its figures).
 */
async function runOnce(
  ctx: BenchContext,
  name: string,
  settings: ClusterSettings,
  redis: { env: Record<string, string>; servers: () => Promise<Redis[]>; setup: string },
  partitions: number,
): Promise<ClusterRun> {
  const prefix = benchPrefix(ctx, name);
  const perPartition = Math.max(1, Math.round(settings.concurrency / partitions));
  const configPath = writeConfig(ctx, name, { ...QUERIES_CONFIG, concurrency: perPartition });
  const simulator = await startBenchSimulator(ctx, { minMs: 0, maxMs: 0 });
  const env = { ...workerEnv(ctx, prefix, simulator.url, 0), ...redis.env };
  const config: Config = configFor(configPath, env);
  const connection = workerConnection(config.redis, 'cw-bench');
  const context = App.compose(config, createLogger({ level: 'warn', name: 'bench' }), {
    redis: connection,
  });
  const scheduler = context.queryScheduler();
  const outbound = new Queue(config.delivery.outbound_queue.name, { connection, prefix });
  try {
    ctx.say(`cluster: ${name}: preparing ${settings.queries} patients`);
    const patients = new Array<string>(settings.queries);
    await forEachLimit(
      Array.from({ length: settings.queries }, (_, i) => i),
      64,
      async (i) => {
        const { patientServiceId } = await context.crosswalk.resolve(`CLUSTER-MRN-${i}`);
        await context.records.put(patientServiceId, benchRecord(i));
        patients[i] = patientServiceId;
      },
    );
    const worker = await startWorker(ctx, `${name} worker`, {
      configPath,
      prefix,
      simulatorUrl: simulator.url,
      env: redis.env,
    });
    try {
      const servers = await redis.servers();
      const before = await Promise.all(servers.map(commandCalls));
      ctx.say(`cluster: ${name}: ${settings.queries} queries through the pipeline`);
      const t0 = Date.now();
      const at = new Date().toISOString();
      await forEachLimit(patients, 64, async (patientServiceId, i) => {
        await scheduler.schedule(patientServiceId, CATEGORY, { eventId: `bench-${i}`, at });
      });
      const t1 = await until(async () => (await outbound.getWaitingCount()) >= settings.queries, {
        everyMs: 25,
        timeoutMs: 300_000,
        what: 'every result event',
      });
      const after = await Promise.all(servers.map(commandCalls));
      const calls = after.map((n, i) => n - (before[i] ?? 0));
      const total = calls.reduce((a, b) => a + b, 0);
      const seconds = (t1 - t0) / 1_000;
      return {
        setup: redis.setup,
        partitions,
        concurrency_per_partition: perPartition,
        queries: settings.queries,
        seconds: round(seconds, 2) ?? 0,
        queries_per_s: round(settings.queries / seconds, 0),
        remote_jobs_submitted: (await simulatorStats(simulator)).jobs,
        commands_by_node: await Promise.all(
          servers.map(async (server, i) => {
            const node = `${server.options.host ?? '?'}:${server.options.port ?? '?'}`;
            return {
              node,
              // Which partitions' hash tags this server holds (partition 0 also has the outbound queue).
              partitions: await partitionsOn(server, context.partitions.prefixes, partitions),
              calls: calls[i] ?? 0,
              share: total === 0 ? null : round((calls[i] ?? 0) / total, 3),
            };
          }),
        ),
        commands_per_query: round(total / settings.queries, 1),
      };
    } finally {
      await worker.stop();
    }
  } finally {
    await outbound.close();
    connection.disconnect();
    await simulator.close();
  }
}

/**
 * Pipeline throughput with `partitions` partitions on a private 3-node Redis Cluster against one
 * partition on the bench's single Redis, in the same run, and how the commands spread over the
 * cluster's masters. On a 2-core machine all of it (three redis-servers, the worker, the service,
 * the load) shares two cores: the ratio shows what the cluster costs, not what it scales to.
 */
export async function clusterScenario(
  ctx: BenchContext,
  settings: ClusterSettings,
): Promise<ClusterResult> {
  const single = await runOnce(
    ctx,
    'single',
    settings,
    {
      env: { REDIS_PARTITIONS: '1' },
      servers: async () => [ctx.redis.admin],
      setup: `one redis-server (${ctx.redis.origin}), 1 partition`,
    },
    1,
  );
  await clearRedis(ctx.redis, benchPrefix(ctx, 'single'));

  ctx.say('cluster: starting a private 3-node Redis Cluster');
  const cluster = await startLocalRedisCluster(3);
  const removeCluster = ctx.cleanup.add('redis cluster', () => cluster.stop());
  const admin = workerConnection(
    { url: cluster.urls[0] ?? '', cluster_nodes: cluster.nodes },
    'cw-bench-admin',
  );
  try {
    await new Promise<void>((resolve) => {
      if (admin.status === 'ready') resolve();
      else admin.once('ready', () => resolve());
    });
    const clustered = await runOnce(
      ctx,
      'cluster',
      settings,
      {
        env: {
          REDIS_URL: cluster.urls[0] ?? '',
          REDIS_CLUSTER_NODES: cluster.nodes.join(','),
          REDIS_PARTITIONS: String(settings.partitions),
        },
        servers: async () => scanTargets(admin),
        setup: `a private 3-node Redis Cluster (3 redis-servers, no replicas), ${settings.partitions} partitions`,
      },
      settings.partitions,
    );
    return {
      settings: {
        ...settings,
        queries_config: QUERIES_CONFIG,
        setup:
          'the pipeline scenario twice in one run, one `concordance-worker work` child each: one partition on one ' +
          `redis-server, then ${settings.partitions} partitions on a 3-node cluster; the same worker concurrency in all ` +
          `(${settings.concurrency}, split over the partitions); ${settings.queries} patients, one ${CATEGORY} query each, ` +
          'zero-latency local service; time from the first schedule call to the last result event; ' +
          'INFO commandstats calls of every master read before the first schedule call and after the last result ' +
          "(the difference; the bench's own reads included)",
      },
      single,
      cluster: clustered,
      ratio:
        single.queries_per_s === null || clustered.queries_per_s === null
          ? null
          : round(clustered.queries_per_s / single.queries_per_s, 3),
    };
  } finally {
    admin.disconnect();
    await cluster.stop();
    removeCluster();
  }
}
