import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/** A Redis the caller started or found, and how to let go of it. */
export interface LocalRedis {
  url: string;
  /** Where it came from, e.g. `REDIS_URL` or `redis-server`. */
  origin: string;
  stop(): Promise<void>;
}

/** True when a Redis at `url` answers PING within a second. */
export async function redisAnswers(url: string): Promise<boolean> {
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

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Arguments of a throw-away `redis-server`: loopback only, no persistence, `noeviction` (BullMQ). */
export function redisServerArgs(port: number): string[] {
  return [
    ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    ...['--maxmemory-policy', 'noeviction'],
  ];
}

/**
 * Starts a private `redis-server` (no persistence, `noeviction` as BullMQ needs) on a free port;
 * rejects when `redis-server` is not installed or does not answer within 5 s.
 */
export async function startPrivateRedis(): Promise<LocalRedis> {
  const port = await freePort();
  const child = spawn('redis-server', redisServerArgs(port), { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const failed = once(child, 'error').then(([err]) => {
    throw new Error(`could not start redis-server: ${(err as Error).message}`);
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  };
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await Promise.race([redisAnswers(url), failed]))
      return { url, origin: 'redis-server', stop };
    await new Promise((resolve) => setTimeout(resolve, 50)); // polling a child's start-up
  }
  await stop();
  throw new Error('redis-server did not answer within 5 s');
}
