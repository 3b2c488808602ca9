import { describe, expect, it } from 'vitest';
import { hash32, seededRandom, uuidFrom } from './seeded-random.ts';

const draw = (n: number, ...parts: (string | number)[]) => {
  const r = seededRandom(...parts);
  return Array.from({ length: n }, () => r.uint32());
};

describe('seededRandom', () => {
  it('repeats the same stream for the same seed and name', () => {
    expect(draw(20, 7, 'graph')).toEqual(draw(20, 7, 'graph'));
  });

  it('gives different streams for another seed or another name', () => {
    expect(draw(20, 7, 'graph')).not.toEqual(draw(20, 8, 'graph'));
    expect(draw(20, 7, 'graph')).not.toEqual(draw(20, 7, 'faults'));
  });

  it('keeps int() within its inclusive bounds and reaches both ends', () => {
    const r = seededRandom(1, 'int');
    const seen = new Set(Array.from({ length: 2000 }, () => r.int(3, 6)));
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
  });

  it('never hits with probability 0 and always with probability 1', () => {
    const r = seededRandom(1, 'chance');
    const draws = Array.from({ length: 500 }, () => [r.chance(0), r.chance(1)]);
    expect(draws.every(([zero, one]) => zero === false && one === true)).toBe(true);
  });

  it('spreads next() over [0, 1)', () => {
    const r = seededRandom(3, 'spread');
    const values = Array.from({ length: 10_000 }, () => r.next());
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
  });

  it('refuses to pick from an empty list', () => {
    expect(() => seededRandom(1).pick([])).toThrow(RangeError);
  });
});

describe('uuidFrom', () => {
  it('draws distinct, UUID-shaped (version 4 layout) ids', () => {
    const r = seededRandom(1, 'ids');
    const ids = Array.from({ length: 1000 }, () => uuidFrom(r));
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('hash32', () => {
  it('is stable and unsigned', () => {
    expect(hash32('abc')).toBe(hash32('abc'));
    expect(hash32('abc')).not.toBe(hash32('abd'));
    expect(hash32('anything')).toBeGreaterThanOrEqual(0);
  });
});
