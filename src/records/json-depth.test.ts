import { describe, expect, it } from 'vitest';
import { pathDeeperThan } from './json-depth.ts';

describe('pathDeeperThan', () => {
  it('counts the value itself as level 1, objects and arrays alike', () => {
    expect(pathDeeperThan({ a: { b: 1 } }, 2)).toBeUndefined();
    expect(pathDeeperThan({ a: { b: {} } }, 2)).toEqual(['a', 'b']);
    expect(pathDeeperThan([[1], [[2]]], 2)).toEqual([1, 0]);
    expect(pathDeeperThan('text', 1)).toBeUndefined();
    expect(pathDeeperThan(undefined, 1)).toBeUndefined();
  });

  it('finds a deep branch beside shallow ones', () => {
    expect(pathDeeperThan({ x: 1, y: [1, 2], z: { q: { r: { s: 1 } } } }, 3)).toEqual([
      'z',
      'q',
      'r',
    ]);
  });

  it('handles 200,000 levels without exhausting the stack, with a short path', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = { a: deep };
    const path = pathDeeperThan(deep, 8);
    expect(path).toEqual(Array.from({ length: 8 }, () => 'a'));
  });
});
