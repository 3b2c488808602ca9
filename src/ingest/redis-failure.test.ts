import { ConnectionClosedError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { isRedisUnavailable } from './redis-failure.ts';

const withCode = (code: string) =>
  Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code });
const named = (name: string) =>
  Object.assign(new Error('Reached the max retries per request limit'), { name });

describe('isRedisUnavailable', () => {
  it('recognises the ways ioredis and BullMQ report a lost connection', () => {
    expect(
      isRedisUnavailable(
        new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      ),
    ).toBe(true);
    expect(isRedisUnavailable(new Error('Connection is closed.'))).toBe(true);
    expect(isRedisUnavailable(new Error('Command timed out'))).toBe(true);
    expect(
      isRedisUnavailable(
        new Error("Socket timeout. Expecting data, but didn't receive any in 2000ms."),
      ),
    ).toBe(true);
    expect(isRedisUnavailable(named('MaxRetriesPerRequestError'))).toBe(true);
    expect(isRedisUnavailable(new ConnectionClosedError())).toBe(true);
    expect(isRedisUnavailable(withCode('ECONNREFUSED'))).toBe(true);
    expect(isRedisUnavailable(new Error('LOADING Redis is loading the dataset in memory'))).toBe(
      true,
    );
  });

  it('looks through causes and aggregates', () => {
    expect(isRedisUnavailable(new Error('add failed', { cause: withCode('ECONNRESET') }))).toBe(
      true,
    );
    expect(isRedisUnavailable(new AggregateError([new Error('x'), withCode('ETIMEDOUT')]))).toBe(
      true,
    );
  });

  it('leaves bugs and refused commands alone', () => {
    expect(isRedisUnavailable(new TypeError('x is undefined'))).toBe(false);
    expect(isRedisUnavailable(new Error('ERR wrong number of arguments'))).toBe(false);
    expect(isRedisUnavailable('Connection is closed.')).toBe(false);
    expect(isRedisUnavailable(undefined)).toBe(false);
  });
});
