import { describe, expect, it } from 'vitest';
import { bearerTokenIndex, bearerTokenMatcher, bearerTokenOf } from './bearer-auth.ts';

describe('bearerTokenOf', () => {
  it('takes the token of a Bearer header, whatever the scheme’s case', () => {
    expect(bearerTokenOf('Bearer abc.def-123')).toBe('abc.def-123');
    expect(bearerTokenOf('bearer abc')).toBe('abc');
  });

  it('refuses other schemes, empty tokens and missing headers', () => {
    expect(bearerTokenOf('Basic dXNlcjpwYXNz')).toBeUndefined();
    expect(bearerTokenOf('Bearer ')).toBeUndefined();
    expect(bearerTokenOf('Bearer a b')).toBeUndefined();
    expect(bearerTokenOf('abc')).toBeUndefined();
    expect(bearerTokenOf(undefined)).toBeUndefined();
  });
});

describe('bearerTokenMatcher', () => {
  it('accepts each configured token and nothing else', () => {
    const matches = bearerTokenMatcher(['token-one-0123456789', 'token-two-0123456789']);
    expect(matches('token-one-0123456789')).toBe(true);
    expect(matches('token-two-0123456789')).toBe(true);
    expect(matches('token-one-012345678')).toBe(false);
    expect(matches('token-one-0123456789x')).toBe(false);
    expect(matches('')).toBe(false);
  });

  it('accepts nothing when no token is configured', () => {
    expect(bearerTokenMatcher([])('anything-at-all-123')).toBe(false);
  });
});

describe('bearerTokenIndex', () => {
  it('answers the position of the matching token, -1 for none', () => {
    const indexOf = bearerTokenIndex(['admin-one-0123456789', 'admin-two-0123456789']);
    expect(indexOf('admin-one-0123456789')).toBe(0);
    expect(indexOf('admin-two-0123456789')).toBe(1);
    expect(indexOf('admin-two-012345678')).toBe(-1);
    expect(bearerTokenIndex([])('admin-one-0123456789')).toBe(-1);
  });
});
