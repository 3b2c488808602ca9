import { hashTagOf } from './redis-partitioning.ts';
import type { ConfigProblem } from './config-error.ts';
import type { Config } from './config-schema.ts';

/**
 * What makes a Redis Cluster or partition setting unusable: a prefix without a hash tag (a script's
 * keys would fall in different slots), a database other than 0 on a cluster (a cluster has only
 * 0), a worker partition that does not exist.
 */
export function scaleOutProblems(config: Pick<Config, 'redis' | 'worker'>): ConfigProblem[] {
  const { redis, worker } = config;
  const problems: ConfigProblem[] = [];
  const cluster = redis.cluster_nodes.length > 0;
  if ((cluster || redis.partitions > 1) && hashTagOf(redis.prefix) === undefined) {
    problems.push({
      path: 'redis.prefix',
      message: `${cluster ? 'REDIS_CLUSTER_NODES' : 'REDIS_PARTITIONS > 1'} needs a prefix with a hash tag, e.g. {cw}`,
    });
  }
  if (cluster) {
    const db = new URL(redis.url).pathname.replace(/^\//, '');
    if (db !== '' && db !== '0') {
      problems.push({
        path: 'redis.url',
        message: 'a Redis Cluster has only database 0: drop the database from REDIS_URL',
      });
    }
  }
  for (const [index, partition] of (worker.partitions ?? []).entries()) {
    if (partition >= redis.partitions) {
      problems.push({
        path: `worker.partitions.${index}`,
        message: `partition ${partition} does not exist: REDIS_PARTITIONS is ${redis.partitions} (partitions 0 to ${redis.partitions - 1})`,
      });
    }
  }
  return problems;
}
