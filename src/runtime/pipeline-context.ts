import { Queue } from 'bullmq';
import type { RedisClient } from '../queues/redis-client.ts';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config-schema.ts';
import { OutboundQueueChannel } from '../delivery/outbound-queue-channel.ts';
import { OutboundQueueMetrics } from '../delivery/outbound-queue-metrics.ts';
import { deriveCrosswalkKeys, type CrosswalkKeys } from '../identity/crosswalk-keys.ts';
import { Crosswalk } from '../identity/crosswalk.ts';
import type { Logger } from '../observability/logger.ts';
import { PipelineMetrics } from '../observability/pipeline-metrics.ts';
import { processRegistry } from '../observability/process-registry.ts';
import { queryJobOptions } from '../queries/query-job.ts';
import { QueryScheduler } from '../queries/query-scheduler.ts';
import { QueryState } from '../queries/query-state.ts';
import { Partitions } from '../queues/partitions.ts';
import { CONCORDANCE_QUERIES } from '../queues/queue-names.ts';
import { RecordStore } from '../records/record-store.ts';
import { StartupError } from './startup-error.ts';

/** The domain pieces every process builds from its configuration and one Redis connection. */
export interface PipelineContext {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  /** The configured prefix (`redis.prefix`): partition 0's, and that of what is no patient's. */
  prefix: string;
  /**
   * The partitions of the patients' keys and queues (`redis.partitions`; one partition is the
   * prefix alone). The stores below are built on them.
   */
  partitions: Partitions;
  keys: CrosswalkKeys;
  crosswalk: Crosswalk;
  records: RecordStore;
  state: QueryState;
  /** The process's registry: what its `/metrics` serves (with the default process metrics). */
  metrics: Registry;
  /** The `cw_` metrics on {@link PipelineContext.metrics}. */
  pipelineMetrics: PipelineMetrics;
  /** The outbound queue's consumer-lag metrics, on the same registry (every process shows them). */
  outboundMetrics: OutboundQueueMetrics;
}

export function crosswalkKeysFrom(config: Config): CrosswalkKeys {
  const secret = config.identity.crosswalk_key;
  if (secret === undefined) {
    throw new StartupError(
      'CROSSWALK_KEY is not set: it encrypts the patient id crosswalk and the stored records. ' +
        'Generate one with `openssl rand -base64 32` and keep it safe: without it the crosswalk cannot be read.',
    );
  }
  return deriveCrosswalkKeys(secret);
}

/** Builds the context; `keys` are derived first (see {@link crosswalkKeysFrom}) so that a missing
 * key is reported before any connection is opened. Roles of one process pass the one `registry`
 * they share (see {@link processRegistry}); without it the context gets its own. */
export function pipelineContext(
  config: Config,
  logger: Logger,
  redis: RedisClient,
  keys: CrosswalkKeys = crosswalkKeysFrom(config),
  registry: Registry = processRegistry(),
): PipelineContext {
  const prefix = config.redis.prefix;
  const partitions = Partitions.of(config.redis);
  const metrics = registry;
  return {
    config,
    logger,
    redis,
    prefix,
    partitions,
    keys,
    crosswalk: new Crosswalk({ redis, prefix: partitions, keys }),
    records: new RecordStore({ redis, prefix: partitions, keys }),
    state: new QueryState({ redis, prefix: partitions }),
    metrics,
    pipelineMetrics: new PipelineMetrics(metrics),
    outboundMetrics: new OutboundQueueMetrics(metrics),
  };
}

/**
 * The query queue as producers see it: submission retries and retention are set per job.
 * Partition 0's queue unless `partition` says otherwise.
 */
export function queriesQueue(
  context: Pick<PipelineContext, 'config' | 'prefix'> & { partitions?: Partitions },
  connection: RedisClient,
  partition = 0,
): Queue {
  return new Queue(CONCORDANCE_QUERIES, {
    connection,
    prefix: context.partitions?.prefixAt(partition) ?? context.prefix,
    defaultJobOptions: queryJobOptions(context.config.queries),
  });
}

/** The query queue of every partition (index = partition). */
export function queriesQueues(context: PipelineContext, connection: RedisClient): Queue[] {
  return context.partitions.prefixes.map((_, p) => queriesQueue(context, connection, p));
}

/** The partitions a worker process serves: `worker.partitions`, else every one. */
export function servedPartitions(config: Config): number[] {
  return config.worker.partitions ?? Array.from({ length: config.redis.partitions }, (_, p) => p);
}

export function queryScheduler(context: PipelineContext): QueryScheduler {
  return new QueryScheduler({
    state: context.state,
    debounceMs: context.config.queries.debounce_ms,
  });
}

/** The outbound queue channel on its own (tests, bench); needs `OUTBOUND_KEY`. */
export function outboundChannel(
  context: PipelineContext,
  connection: RedisClient,
): OutboundQueueChannel {
  const outbound = context.config.delivery.outbound_queue;
  if (outbound.key === undefined) {
    throw new StartupError('OUTBOUND_KEY is not set: the outbound queue seals patient_id with it');
  }
  return new OutboundQueueChannel({
    connection,
    prefix: context.prefix,
    name: outbound.name,
    retention: outbound.retention,
    key: outbound.key,
  });
}
