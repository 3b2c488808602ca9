import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { partitionPrefixes, slotOf } from '../../../src/queues/partitions.ts';
import { scanKeys, scanTargets, type RedisClient } from '../../../src/queues/redis-client.ts';
import {
  queueConnectionFor,
  redisAnswers,
  requestConnection,
  workerConnection,
} from '../../../src/queues/redis-connections.ts';
import { freePort } from '../../../tools/local-redis.ts';
import { eventually } from '../../support/eventually.ts';
import { clusterForTest, type TestCluster } from '../../support/redis-cluster.ts';
import { deleteKeysUnder } from '../../support/redis.ts';

/** Which master serves a key's slot, as `host:port`. */
async function ownerOf(redis: Cluster, key: string): Promise<string> {
  const slot = slotOf(key);
  const ranges = await redis.cluster('SLOTS');
  const master = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2];
  if (master === undefined) throw new Error(`no master serves slot ${slot}`);
  return `${master[0]}:${master[1]}`;
}

describe('a Redis Cluster (REDIS_CLUSTER_NODES)', () => {
  let cluster: TestCluster;
  const prefix = `{cwtest-${randomUUID()}}`;
  const opened: RedisClient[] = [];

  beforeAll(async () => {
    cluster = await clusterForTest();
  });
  afterAll(async () => {
    const cleaner = workerConnection(cluster.endpoint, 'cleanup');
    await deleteKeysUnder(cleaner, prefix.slice(0, -1));
    await cleaner.quit();
    for (const connection of opened) connection.disconnect();
    await cluster.stop();
  });

  it('makes every connection of the config a Cluster client, and a BullMQ queue and worker run on it', async () => {
    const config = loadConfig({
      env: {
        REDIS_CLUSTER_NODES: cluster.nodes.join(','),
        REDIS_URL: cluster.endpoint.url,
        REDIS_PREFIX: prefix,
      },
    });
    const worker = workerConnection(config.redis, 'test-cluster-worker');
    const request = requestConnection(config.redis, 'test-cluster-request');
    opened.push(worker, request);
    expect(worker).toBeInstanceOf(Cluster);
    expect(request).toBeInstanceOf(Cluster);
    // BullMQ requires this of a worker's connection; a request connection fails fast instead.
    expect((worker as Cluster).options.redisOptions?.maxRetriesPerRequest).toBeNull();
    expect((request as Cluster).options.enableOfflineQueue).toBe(false);
    expect(await redisAnswers(worker)).toBe(true);

    // BullMQ queues of a request path get a copy that waits for the cluster (see the function).
    const forQueues = queueConnectionFor(request);
    expect(forQueues.owned).toBe(true);
    opened.push(forQueues.connection);
    const queue = new Queue('cluster-smoke', { connection: forQueues.connection, prefix });
    await queue.waitUntilReady();
    const done: string[] = [];
    const consumer = new Worker(
      'cluster-smoke',
      async (job) => {
        done.push(String(job.data.n));
      },
      { connection: worker, prefix },
    );
    await queue.addBulk([1, 2, 3].map((n) => ({ name: 'n', data: { n } })));
    await eventually(
      async () => [...done].sort(),
      (seen) => seen.length === 3,
    );
    expect(done.sort()).toEqual(['1', '2', '3']);
    await consumer.close();
    await queue.close();
  });

  it("walks every master in a key scan (partitions' keys sit on different masters)", async () => {
    const redis = workerConnection(cluster.endpoint, 'test-cluster-scan') as Cluster;
    opened.push(redis);
    await new Promise((resolve) => redis.once('ready', resolve));
    expect(scanTargets(redis)).toHaveLength(3);
    // Three partitions' prefixes are placed one per master of an evenly split cluster.
    const keys = partitionPrefixes(prefix, 3).map((p) => `${p}:probe`);
    const owners = await Promise.all(keys.map((key) => ownerOf(redis, key)));
    expect(new Set(owners).size).toBe(3);
    for (const key of keys) await redis.set(key, '1');
    expect((await scanKeys(redis, `${prefix.slice(0, -1)}*:probe`)).sort()).toEqual(keys.sort());
    // A plain SCAN on one node would have seen one of them only.
    const [, one] = await (scanTargets(redis)[0] as Redis).scan(
      '0',
      'MATCH',
      '*:probe',
      'COUNT',
      1000,
    );
    expect(one.filter((key) => key.startsWith(prefix.slice(0, -1)))).toHaveLength(1);
  });

  it('fails a request fast while the cluster cannot be reached', async () => {
    const nowhere = await freePort();
    const request = requestConnection(
      { url: `redis://127.0.0.1:${nowhere}`, cluster_nodes: [`127.0.0.1:${nowhere}`] },
      'test-cluster-down',
    );
    opened.push(request);
    request.on('error', () => undefined);
    await expect(request.get(`${prefix}:x`)).rejects.toThrow(/enableOfflineQueue|ready/i);
  });
});
