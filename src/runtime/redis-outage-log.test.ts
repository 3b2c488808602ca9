import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureLogs } from '../../test/support/log-capture.ts';
import { isConnectionError, RedisOutageLog } from './redis-outage-log.ts';

/** An ioredis-like connection: a status and its events. */
class FakeConnection extends EventEmitter {
  status = 'ready';
}

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
const messages = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { msg: string }).msg);

describe('RedisOutageLog', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('logs one line when Redis goes away and one when it is back, however many errors come between', () => {
    const logs = captureLogs('info');
    const connection = new FakeConnection();
    const worker = new EventEmitter();
    const outages = new RedisOutageLog({ logger: logs.logger })
      .watch(connection)
      .listen('q', worker);
    for (let i = 0; i < 50; i++) {
      connection.emit('error', refused());
      worker.emit('error', new Error('Connection is closed.'));
    }
    expect(outages.down).toBe(true);
    connection.emit('ready');
    connection.emit('ready');
    connection.emit('error', refused());
    connection.emit('ready');
    expect(messages(logs.lines)).toEqual([
      'redis unreachable: waiting for it to come back',
      'redis reachable again',
      'redis unreachable: waiting for it to come back',
      'redis reachable again',
    ]);
    // Only the error's name, code and message: never a stack.
    const first = JSON.parse(logs.lines[0] ?? '{}') as { err: Record<string, unknown> };
    expect(first.err).toMatchObject({ code: 'ECONNREFUSED', name: 'Error' });
    expect(first.err.stack ?? '').toBe('');
  });

  it('logs other queue errors as they come', () => {
    const logs = captureLogs('info');
    const queue = new EventEmitter();
    new RedisOutageLog({ logger: logs.logger }).listen('concordance-queries', queue);
    queue.emit('error', new TypeError('x is not a function'));
    expect(logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ msg: 'queue error', queue: 'concordance-queries' }),
    ]);
  });

  it('notices a hung Redis through its heartbeat, and its return', async () => {
    vi.useFakeTimers();
    const logs = captureLogs('info');
    let answers = true;
    const outages = new RedisOutageLog({
      logger: logs.logger,
      probe: async () => answers,
      heartbeatMs: 1_000,
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(logs.lines).toEqual([]);
    answers = false;
    await vi.advanceTimersByTimeAsync(3_000);
    answers = true;
    await vi.advanceTimersByTimeAsync(1_000);
    outages.stop();
    expect(messages(logs.lines)).toEqual([
      'redis unreachable: waiting for it to come back',
      'redis reachable again',
    ]);
  });

  it('tells connection errors from bugs', () => {
    expect(isConnectionError(refused())).toBe(true);
    expect(isConnectionError(new Error('Command timed out'))).toBe(true);
    expect(
      isConnectionError(
        new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      ),
    ).toBe(true);
    expect(isConnectionError(new TypeError('x is undefined'))).toBe(false);
  });
});
