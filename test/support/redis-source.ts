import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/** A Redis the tests may use, and how to let go of it. */
export interface RedisSource {
  url: string;
  /** Where it came from: `testcontainers`, `REDIS_URL`, `localhost` or `redis-server`. */
  origin: string;
  stop(): Promise<void>;
}

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function fromTestcontainers(): Promise<RedisSource | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
  } catch {
    return undefined; // no Docker engine answers here
  }
  const { RedisContainer } = await import('@testcontainers/redis');
  const container = await new RedisContainer('redis:7-alpine').start();
  return {
    url: container.getConnectionUrl(),
    origin: 'testcontainers',
    stop: async () => {
      await container.stop();
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

async function fromRedisServer(): Promise<RedisSource> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const spawnFailure = once(child, 'error').then(([err]) => {
    throw new Error(`could not start redis-server: ${(err as Error).message}`);
  });
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await Promise.race([answers(url), spawnFailure])) {
      return {
        url,
        origin: 'redis-server',
        stop: async () => {
          child.kill('SIGTERM');
          if (child.exitCode === null) await once(child, 'exit');
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 50)); // polling a child's start-up
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not answer within 5 s');
}

/**
 * Docker (testcontainers) when an engine answers; else `REDIS_URL`; else 127.0.0.1:6379;
 * else a `redis-server` started here on a free port.
 */
export async function acquireRedis(env: NodeJS.ProcessEnv = process.env): Promise<RedisSource> {
  const containerised = await fromTestcontainers();
  if (containerised) return containerised;
  const none = async () => undefined;
  if (env.REDIS_URL && (await answers(env.REDIS_URL))) {
    return { url: env.REDIS_URL, origin: 'REDIS_URL', stop: none };
  }
  const local = 'redis://127.0.0.1:6379';
  if (await answers(local)) return { url: local, origin: 'localhost', stop: none };
  return fromRedisServer();
}
