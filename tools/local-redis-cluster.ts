import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, redisAnswers, redisServerArgs } from './local-redis.ts';

const run = promisify(execFile);

/** A throw-away Redis Cluster on loopback: its masters' `host:port`, and how to stop it. */
export interface LocalRedisCluster {
  /** `127.0.0.1:<port>` of each master (what `REDIS_CLUSTER_NODES` takes, comma-separated). */
  nodes: string[];
  /** The servers' own URLs (one per master), e.g. for `INFO` per node. */
  urls: string[];
  stop(): Promise<void>;
}

/** Whether a cluster node reports `cluster_state:ok` (every slot served). */
async function clusterOk(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return /cluster_state:ok/.test(await client.cluster('INFO'));
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Polls `check` every 50 ms for up to `ms`; false when it never held (a child's start-up). */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await delay(50);
  }
  return false;
}

/**
 * Starts `size` (default 3) `redis-server --cluster-enabled yes` on free loopback ports in a
 * temporary directory (no persistence, `noeviction`), joins them with
 * `redis-cli --cluster create … --cluster-replicas 0 --cluster-yes` (equal slot ranges, one per
 * master), and resolves once every node reports `cluster_state:ok`. Rejects (after stopping what
 * it started) when `redis-server` or `redis-cli` is missing or the cluster does not form in 20 s.
 */
export async function startLocalRedisCluster(size = 3): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cw-redis-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          await once(child, 'exit');
        }
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < size; i++) {
      // A port found free may be taken before redis-server binds it: then another is tried.
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const child = spawn(
          'redis-server',
          [
            ...redisServerArgs(port),
            ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`],
            ...['--cluster-node-timeout', '5000', '--dir', dir],
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let output = '';
        const keep = (chunk: Buffer) => {
          output = (output + chunk.toString('utf8')).slice(-2_000);
        };
        child.stdout?.on('data', keep);
        child.stderr?.on('data', keep);
        const failed = Promise.race([
          once(child, 'error').then(([err]) => `could not start: ${(err as Error).message}`),
          once(child, 'exit').then(([code]) => `exited (${String(code)})`),
        ]);
        children.push(child);
        const url = `redis://127.0.0.1:${port}`;
        const outcome = await Promise.race([within(10_000, () => redisAnswers(url)), failed]);
        if (outcome === true) {
          ports.push(port);
          break;
        }
        const why = outcome === false ? 'did not answer within 10 s' : outcome;
        if (attempt >= 3) throw new Error(`redis-server on ${port} ${why}:\n${output}`);
      }
    }
    const nodes = ports.map((port) => `127.0.0.1:${port}`);
    await run(
      'redis-cli',
      ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 20_000 },
    );
    const urls = nodes.map((node) => `redis://${node}`);
    const formed = await within(20_000, async () =>
      (await Promise.all(urls.map(clusterOk))).every(Boolean),
    );
    if (!formed) throw new Error('the Redis Cluster did not reach cluster_state:ok within 20 s');
    return { nodes, urls, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
