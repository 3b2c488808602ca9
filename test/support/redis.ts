import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { inject } from 'vitest';
import { workerConnection, type RedisEndpoint } from '../../src/queues/redis-connections.ts';
import { scanEach, type RedisClient } from '../../src/queues/redis-client.ts';

/** The Redis the global setup chose for this run (a single server, whatever the mode). */
export function testRedisUrl(): string {
  return inject('redisUrl');
}

/** The masters of the Redis Cluster of this run (`TEST_REDIS_CLUSTER=1`), else empty. */
export function testClusterNodes(): string[] {
  return inject('redisClusterNodes');
}

/** `redis.partitions` of the pipelines this run's tests start (`TEST_REDIS_PARTITIONS`). */
export function testPartitions(): number {
  return inject('redisPartitions');
}

/** True when this run is the Redis Cluster run (`npm run test:cluster`). */
export function usesRedisCluster(): boolean {
  return testClusterNodes().length > 0;
}

/**
 * Where the pipeline's Redis is, as `config.redis` would say it: the cluster of a cluster run,
 * else the single server.
 */
export function testRedisEndpoint(): RedisEndpoint {
  const nodes = testClusterNodes();
  return nodes.length > 0
    ? { url: `redis://${nodes[0]}`, cluster_nodes: nodes }
    : { url: testRedisUrl() };
}

/**
 * The environment a pipeline process needs to find the test's Redis (or cluster), with the run's
 * partitions.
 */
export function testRedisEnv(): Record<string, string> {
  const endpoint = testRedisEndpoint();
  return {
    REDIS_URL: endpoint.url,
    REDIS_PARTITIONS: String(testPartitions()),
    ...(endpoint.cluster_nodes === undefined
      ? {}
      : { REDIS_CLUSTER_NODES: endpoint.cluster_nodes.join(',') }),
  };
}

/**
 * A connection of the test's own (commands wait for Redis): a `Cluster` in a cluster run, or to
 * `endpoint` when given.
 */
export function testRedisClient(endpoint?: RedisEndpoint): RedisClient {
  if (endpoint !== undefined) return workerConnection(endpoint, 'test');
  const nodes = testClusterNodes();
  if (nodes.length === 0) return new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  return new Cluster(
    nodes.map((node) => {
      const [host, port] = node.split(':');
      return { host, port: Number(port) };
    }),
    { redisOptions: { maxRetriesPerRequest: null } },
  );
}

/** Deletes every key under `prefix`, on every server (a cluster's masters one by one). */
export async function deleteKeysUnder(redis: RedisClient, prefix: string): Promise<void> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  // One UNLINK per key: a page of a cluster node's keys may span several slots.
  for await (const keys of scanEach(redis, pattern, { count: 500 })) {
    await Promise.all(keys.map((key) => redis.unlink(key)));
  }
}

/**
 * A key prefix of this test's own (`{cwtest-…}`, a hash tag as in production), and a connection
 * that deletes everything under it when the test is done. In a cluster run both are the cluster's.
 */
export async function isolatedRedis(endpoint?: RedisEndpoint): Promise<{
  prefix: string;
  redis: RedisClient;
  cleanup(): Promise<void>;
}> {
  const prefix = `{cwtest-${randomUUID()}}`;
  const redis = testRedisClient(endpoint);
  return {
    prefix,
    redis,
    async cleanup() {
      await deleteKeysUnder(redis, prefix);
      // With partitions, partition p >= 1 is `{cwtest-….p<p>…}`: under the same text up to the `}`.
      await deleteKeysUnder(redis, prefix.slice(0, -1));
      await redis.quit();
    },
  };
}
