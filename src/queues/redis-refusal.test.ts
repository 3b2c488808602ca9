import { describe, expect, it } from 'vitest';
import { isRedisAuthRefusal, RedisRefusedError } from './redis-refusal.ts';

const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

describe('isRedisAuthRefusal', () => {
  it('knows the replies of a Redis that refuses our credentials or ACL', () => {
    for (const message of [
      'WRONGPASS invalid username-password pair or user is disabled.',
      'NOAUTH Authentication required.',
      "NOPERM this user has no permissions to run the 'info' command",
      'NOPERM No permissions to access a key',
      '-ERR invalid password',
      'ERR invalid password',
    ]) {
      expect(isRedisAuthRefusal(reply(message)), message).toBe(true);
    }
  });

  it('finds a refusal wrapped in another error', () => {
    expect(isRedisAuthRefusal(new Error('start-up', { cause: reply('NOAUTH x') }))).toBe(true);
  });

  it('is false for an unreachable Redis and other errors', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), {
      code: 'ECONNREFUSED',
    });
    for (const err of [
      refused,
      new Error('Connection is closed.'),
      reply('LOADING Redis is loading the dataset in memory'),
      reply('ERR unknown command'),
      'WRONGPASS as a string',
    ]) {
      expect(isRedisAuthRefusal(err)).toBe(false);
    }
  });
});

describe('RedisRefusedError', () => {
  it('names REDIS_URL with its password hidden, and the reply', () => {
    const err = new RedisRefusedError(
      'redis://cw:PLANTED-password@127.0.0.1:6391',
      reply('WRONGPASS invalid username-password pair or user is disabled.'),
    );
    expect(err.code).toBe('ERR_REDIS_REFUSED');
    expect(err.message).toContain('REDIS_URL (redis://cw:***@127.0.0.1:6391)');
    expect(err.message).toContain('WRONGPASS');
    expect(err.message).not.toContain('PLANTED');
  });
});
