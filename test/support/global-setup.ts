import type { TestProject } from 'vitest/node';
import { startLocalRedisCluster } from '../../tools/local-redis-cluster.ts';
import { acquireRedis } from './redis-source.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /**
     * `host:port` of each master of the Redis Cluster the run uses (`TEST_REDIS_CLUSTER=1`, see
     * `npm run test:cluster`); empty when the run uses one Redis server.
     */
    redisClusterNodes: string[];
    /**
     * `redis.partitions` of the pipelines the tests start (`TEST_REDIS_PARTITIONS`, 3 in
     * `npm run test:cluster`); 1 otherwise.
     */
    redisPartitions: number;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await acquireRedis();
  console.log(`tests use Redis from ${redis.origin}`);
  project.provide('redisUrl', redis.url);
  const partitions = Number(process.env.TEST_REDIS_PARTITIONS ?? '1');
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new Error('TEST_REDIS_PARTITIONS must be a whole number of at least 1');
  }
  project.provide('redisPartitions', partitions);
  if (partitions > 1) console.log(`the pipelines under test use ${partitions} partitions`);
  let stopCluster = async (): Promise<void> => undefined;
  if (process.env.TEST_REDIS_CLUSTER === '1') {
    // A 3-node cluster of private redis-servers: the pipeline's tests run against it.
    const started = Date.now();
    const cluster = await startLocalRedisCluster(3);
    console.log(
      `tests use a local 3-node Redis Cluster (${cluster.nodes.join(', ')}), formed in ${Date.now() - started} ms`,
    );
    project.provide('redisClusterNodes', cluster.nodes);
    stopCluster = cluster.stop;
  } else {
    project.provide('redisClusterNodes', []);
  }
  return async () => {
    await stopCluster();
    await redis.stop();
  };
}
