import { once } from 'node:events';
import { createConnection } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { testRedisUrl } from '../test/support/redis.ts';
import { TcpProxy } from './tcp-proxy.ts';

const open: { quit(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0)) await thing.quit();
});

function client(proxy: TcpProxy, options: RedisOptions = {}): Redis {
  const redis = new Redis(proxy.redisUrl, {
    maxRetriesPerRequest: null,
    retryStrategy: () => 50,
    ...options,
  });
  redis.on('error', () => undefined);
  open.push({ quit: () => redis.quit().catch(() => redis.disconnect()) });
  return redis;
}

describe('TcpProxy', () => {
  it('relays, holds everything while hung and relays it when forwarding again', async () => {
    const proxy = await TcpProxy.start(testRedisUrl());
    open.push({ quit: () => proxy.close() });
    const redis = client(proxy);
    expect(await redis.ping()).toBe('PONG');

    await proxy.hang();
    const timedOut = client(proxy, { commandTimeout: 200 });
    await expect(timedOut.ping()).rejects.toThrow('Command timed out');
    let answered = false;
    const held = redis.ping().then((reply) => {
      answered = true;
      return reply;
    });
    // The held command is still unanswered once a command sent after it timed out.
    await expect(timedOut.ping()).rejects.toThrow('Command timed out');
    expect(answered).toBe(false);

    await proxy.forward();
    expect(await held).toBe('PONG');
    expect(await timedOut.ping()).toBe('PONG');
  });

  it('refuses new connections, resets open ones, and listens on the same port again', async () => {
    const proxy = await TcpProxy.start(testRedisUrl());
    open.push({ quit: () => proxy.close() });
    const port = proxy.port;
    const redis = client(proxy);
    expect(await redis.ping()).toBe('PONG');

    await proxy.refuse();
    const socket = createConnection({ host: '127.0.0.1', port });
    const [err] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ECONNREFUSED');
    expect(proxy.connections).toBe(0);

    await proxy.forward();
    expect(proxy.port).toBe(port);
    // The first client reconnects on its own.
    expect(await redis.ping()).toBe('PONG');
  });

  it('in reset mode accepts, resets and counts every connection attempt', async () => {
    const proxy = await TcpProxy.start(testRedisUrl());
    open.push({ quit: () => proxy.close() });
    await proxy.reset();
    const before = proxy.accepted;
    const socket = createConnection({ host: '127.0.0.1', port: proxy.port });
    const [err] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ECONNRESET');
    expect(proxy.accepted).toBe(before + 1);
    await proxy.forward();
    expect(await client(proxy).ping()).toBe('PONG');
  });
});
