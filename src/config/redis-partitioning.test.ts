import { describe, expect, it } from 'vitest';
import { hashTagOf } from './redis-partitioning.ts';

describe('hashTagOf', () => {
  it('is what Redis Cluster hashes: the text between the first { and the next }', () => {
    expect(hashTagOf('{cw}')).toBe('cw');
    expect(hashTagOf('app{cw}:x')).toBe('cw');
    expect(hashTagOf('{cw}{other}')).toBe('cw');
    expect(hashTagOf('cw')).toBeUndefined();
    expect(hashTagOf('{}cw')).toBeUndefined();
    expect(hashTagOf('{cw')).toBeUndefined();
  });
});
