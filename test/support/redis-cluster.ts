import { startLocalRedisCluster } from '../../tools/local-redis-cluster.ts';
import { testClusterNodes } from './redis.ts';

/** A Redis Cluster for a test file: the run's own (`npm run test:cluster`), or one it starts. */
export interface TestCluster {
  /** `host:port` of each master. */
  nodes: string[];
  /** The config lines' `redis` endpoint: any node's URL, and the nodes. */
  endpoint: { url: string; cluster_nodes: string[] };
  stop(): Promise<void>;
}

/**
 * The run's 3-node cluster when there is one; else a private 3-node cluster started now (stopped
 * by `stop`), so that the scale-out tests run in every test run, not only the cluster one.
 */
export async function clusterForTest(): Promise<TestCluster> {
  const given = testClusterNodes();
  if (given.length > 0) {
    return {
      nodes: given,
      endpoint: { url: `redis://${given[0]}`, cluster_nodes: given },
      stop: async () => undefined,
    };
  }
  const started = await startLocalRedisCluster(3);
  return {
    nodes: started.nodes,
    endpoint: { url: started.urls[0] as string, cluster_nodes: started.nodes },
    stop: started.stop,
  };
}
