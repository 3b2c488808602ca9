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
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await acquireRedis();
  console.log(`tests use Redis from ${redis.origin}`);
  project.provide('redisUrl', redis.url);
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
