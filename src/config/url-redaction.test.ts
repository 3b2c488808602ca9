import { describe, expect, it } from 'vitest';
import { redactUrlPassword } from './url-redaction.ts';

describe('redactUrlPassword', () => {
  it('hides the password of a URL and keeps the user, host and port', () => {
    expect(redactUrlPassword('redis://cw:s3cret@10.0.0.5:6379/2')).toBe(
      'redis://cw:***@10.0.0.5:6379/2',
    );
    expect(redactUrlPassword('rediss://:s3cret@redis.example:6380')).toBe(
      'rediss://:***@redis.example:6380',
    );
  });

  it('hides a password holding @, / or : up to the last @', () => {
    expect(redactUrlPassword('redis://cw:a/b@c:d@host:6379')).toBe('redis://cw:***@host:6379');
  });

  it('works on text that is not a URL', () => {
    expect(redactUrlPassword('http//user:pw@proxy:3128')).toBe('http//user:***@proxy:3128');
    expect(redactUrlPassword('user:pw@host')).toBe('user:***@host');
  });

  it('leaves text without a password as it is', () => {
    expect(redactUrlPassword('localhost:6391')).toBe('localhost:6391');
    expect(redactUrlPassword('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(redactUrlPassword('redis://cw@127.0.0.1:6379')).toBe('redis://cw@127.0.0.1:6379');
  });
});
