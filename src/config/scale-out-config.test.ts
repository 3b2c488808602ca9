import { describe, expect, it } from 'vitest';
import { clusterNode, clusterNodeOptions } from '../queues/redis-connections.ts';
import { ConfigError } from './config-error.ts';
import { loadConfig } from './load-config.ts';

function problemsOf(run: () => unknown): { path: string; message: string }[] {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig: Redis Cluster and partitions', () => {
  it('defaults to one Redis server and one partition, worked whole', () => {
    const config = loadConfig({ env: {} });
    expect(config.redis.cluster_nodes).toEqual([]);
    expect(config.redis.partitions).toBe(1);
    expect(config.worker.partitions).toBeNull();
  });

  it('reads REDIS_CLUSTER_NODES, REDIS_PARTITIONS and WORKER_PARTITIONS from the environment', () => {
    const config = loadConfig({
      env: {
        REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-1.cw.svc:7001,[::1]:7002',
        REDIS_PARTITIONS: '3',
        WORKER_PARTITIONS: '0,2',
      },
    });
    expect(config.redis.cluster_nodes).toEqual([
      '10.0.0.1:7000',
      'redis-1.cw.svc:7001',
      '[::1]:7002',
    ]);
    expect(config.redis.partitions).toBe(3);
    expect(config.worker.partitions).toEqual([0, 2]);
  });

  it('takes the same settings from a file', () => {
    const config = loadConfig({ env: { REDIS_PARTITIONS: '4' } });
    expect(config.redis.partitions).toBe(4);
  });

  it('refuses a node that is not host:port, and a port out of range', () => {
    const problems = problemsOf(() =>
      loadConfig({ env: { REDIS_CLUSTER_NODES: 'redis-0,redis-1:70000' } }),
    );
    expect(problems).toEqual([
      expect.objectContaining({ path: 'redis.cluster_nodes.0' }),
      expect.objectContaining({ path: 'redis.cluster_nodes.1' }),
    ]);
  });

  it('refuses partitions below 1, above the maximum, or not a number', () => {
    for (const value of ['0', '33', 'three']) {
      expect(problemsOf(() => loadConfig({ env: { REDIS_PARTITIONS: value } }))).toEqual([
        expect.objectContaining({ path: 'redis.partitions' }),
      ]);
    }
  });

  it('refuses a cluster or partitions with a prefix that has no hash tag', () => {
    expect(
      problemsOf(() =>
        loadConfig({ env: { REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_PREFIX: 'cw' } }),
      ),
    ).toEqual([
      {
        path: 'redis.prefix',
        variable: 'REDIS_PREFIX',
        message: expect.stringMatching(/hash tag/),
      },
    ]);
    expect(
      problemsOf(() => loadConfig({ env: { REDIS_PARTITIONS: '2', REDIS_PREFIX: 'cw{}' } })),
    ).toEqual([
      {
        path: 'redis.prefix',
        variable: 'REDIS_PREFIX',
        message: expect.stringMatching(/hash tag/),
      },
    ]);
    // One partition on one server: a prefix without a tag works as it always did.
    expect(loadConfig({ env: { REDIS_PREFIX: 'cw' } }).redis.prefix).toBe('cw');
  });

  it('refuses a database other than 0 on a cluster', () => {
    expect(
      problemsOf(() =>
        loadConfig({
          env: { REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_URL: 'redis://127.0.0.1:7000/2' },
        }),
      ),
    ).toEqual([
      {
        path: 'redis.url',
        variable: 'REDIS_URL',
        message: expect.stringMatching(/only database 0/),
      },
    ]);
  });

  it('refuses a worker partition that does not exist, or one listed twice', () => {
    expect(
      problemsOf(() => loadConfig({ env: { REDIS_PARTITIONS: '2', WORKER_PARTITIONS: '1,2' } })),
    ).toEqual([
      {
        path: 'worker.partitions.1',
        variable: 'WORKER_PARTITIONS',
        message: expect.stringMatching(/does not exist/),
      },
    ]);
    expect(
      problemsOf(() => loadConfig({ env: { REDIS_PARTITIONS: '2', WORKER_PARTITIONS: '1,1' } })),
    ).toEqual([expect.objectContaining({ path: 'worker.partitions' })]);
  });
});

describe('cluster connection options', () => {
  it('parses host:port, IPv6 in brackets', () => {
    expect(clusterNode('10.0.0.1:7000')).toEqual({ host: '10.0.0.1', port: 7000 });
    expect(clusterNode('[::1]:7002')).toEqual({ host: '::1', port: 7002 });
    expect(() => clusterNode('redis-0')).toThrow(RangeError);
  });

  it("gives every node the URL's ACL user, password (decoded) and TLS", () => {
    expect(
      clusterNodeOptions({ url: 'rediss://cw:p%40ss@redis.example.org:6380', tls: undefined }),
    ).toEqual({ username: 'cw', password: 'p@ss', tls: {} });
    expect(clusterNodeOptions({ url: 'redis://127.0.0.1:7000' })).toEqual({});
  });
});
