import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { captureLogs } from '../../test/support/log-capture.ts';
import { RedisRefusedError } from '../queues/redis-refusal.ts';
import { RedisOutageLog } from './redis-outage-log.ts';
import { RedisRefusalGate } from './redis-refusal-gate.ts';

/** An ioredis-like connection: a status and its events. */
class FakeConnection extends EventEmitter {
  status = 'connect';
}

const URL = 'redis://cw:PLANTED-password@127.0.0.1:6391';
const wrongPass = () =>
  Object.assign(new Error('WRONGPASS invalid username-password pair or user is disabled.'), {
    name: 'ReplyError',
  });
const messages = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { msg: string }).msg);

describe('a Redis that refuses our credentials', () => {
  it('is logged once as a refusal, not as unreachable, and handed on', () => {
    const logs = captureLogs('info');
    const connection = new FakeConnection();
    const queue = new EventEmitter();
    const handed: Error[] = [];
    const outages = new RedisOutageLog({
      logger: logs.logger,
      onRefused: (reply) => handed.push(reply),
      redisUrl: URL,
    })
      .watch(connection)
      .listen('q', queue);
    for (let i = 0; i < 5; i++) connection.emit('error', wrongPass());
    expect(outages.down).toBe(true);
    connection.emit('ready');
    // A queue's command refused on a live connection: handed on, logged as a queue error.
    queue.emit(
      'error',
      new Error("NOPERM this user has no permissions to run the 'evalsha' command"),
    );
    expect(handed.map((reply) => reply.message.split(' ')[0])).toEqual([
      ...Array<string>(5).fill('WRONGPASS'),
      'NOPERM',
    ]);
    expect(outages.down).toBe(false);
    expect(messages(logs.lines)).toEqual([
      'redis refused our credentials or permissions: check the user and password of REDIS_URL and its ACL',
      'redis reachable again',
      'queue error',
    ]);
    expect(logs.lines.join('\n')).not.toContain('PLANTED');
    expect(JSON.parse(logs.lines[0] ?? '{}')).toMatchObject({
      level: 50,
      variable: 'REDIS_URL',
      redis_url: 'redis://cw:***@127.0.0.1:6391',
      err: { name: 'ReplyError', message: expect.stringMatching(/^WRONGPASS/) },
    });
  });

  it('ends a start-up that waits for Redis, naming REDIS_URL without its password', async () => {
    const gate = new RedisRefusalGate(URL);
    const waiting = gate.guard(new Promise<void>(() => undefined));
    gate.refuse(wrongPass());
    gate.refuse(new Error('NOAUTH Authentication required.'));
    const err: unknown = await waiting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisRefusedError);
    expect((err as Error).message).toContain('REDIS_URL (redis://cw:***@127.0.0.1:6391)');
    expect((err as Error).message).toContain('WRONGPASS');
    expect((err as Error).message).not.toContain('PLANTED');
    expect(gate.signal.aborted).toBe(true);
    // A start-up guarded after the refusal fails at once.
    await expect(gate.guard(Promise.resolve('late'))).rejects.toBeInstanceOf(RedisRefusedError);
  });

  it('turns a NOPERM a start-up command met into the same error, and lets others through', async () => {
    const gate = new RedisRefusalGate(URL);
    const noPerm = new Error("NOPERM this user has no permissions to run the 'evalsha' command");
    await expect(gate.guard(Promise.reject(noPerm))).rejects.toMatchObject({
      code: 'ERR_REDIS_REFUSED',
      cause: noPerm,
    });
    const other = new TypeError('a bug');
    await expect(gate.guard(Promise.reject(other))).rejects.toBe(other);
    await expect(gate.guard(Promise.resolve(7))).resolves.toBe(7);
  });
});
