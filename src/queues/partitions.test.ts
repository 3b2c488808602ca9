import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CLUSTER_SLOTS,
  partitionIndex,
  partitionPrefixes,
  Partitions,
  slotOf,
} from './partitions.ts';

describe('partitionIndex', () => {
  it('is the first four bytes of SHA-256, big-endian, modulo the count (fixed values)', () => {
    // Fixed here (sha256 computed with sha256sum): a change would move every patient.
    // sha256("patient-a") = ec56deb2…, sha256("psid-2") = 0f1e5854…
    expect(partitionIndex('patient-a', 3)).toBe(0xec56deb2 % 3);
    expect(partitionIndex('patient-a', 7)).toBe(4);
    expect(partitionIndex('psid-2', 3)).toBe(1);
    expect(partitionIndex('psid-2', 7)).toBe(0);
    expect(partitionIndex('00000000-0000-4000-8000-000000000000', 3)).toBe(2);
    expect(partitionIndex('patient-a', 1)).toBe(0);
  });

  it('spreads random service ids evenly', () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 3_000; i++) {
      const index = partitionIndex(randomUUID(), 3);
      counts[index] = (counts[index] ?? 0) + 1;
    }
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });
});

describe('partitionPrefixes', () => {
  it('keeps the prefix itself for one partition and for partition 0', () => {
    expect(partitionPrefixes('{cw}', 1)).toEqual(['{cw}']);
    expect(partitionPrefixes('cw', 1)).toEqual(['cw']);
    expect(partitionPrefixes('{cw}', 3)[0]).toBe('{cw}');
  });

  it('gives the other partitions their own hash tags, stable across calls', () => {
    const prefixes = partitionPrefixes('{cw}', 3);
    expect(prefixes).toHaveLength(3);
    expect(new Set(prefixes.map((p) => slotOf(p))).size).toBe(3);
    for (const p of prefixes.slice(1)) expect(p).toMatch(/^\{cw\.p[12](\.\d+)?\}$/);
    expect(partitionPrefixes('{cw}', 3)).toEqual(prefixes);
    // The text around the tag stays.
    expect(partitionPrefixes('app{cw}x', 2)[1]).toMatch(/^app\{cw\.p1(\.\d+)?\}x$/);
  });

  it('spreads the slots: N partitions fall in N different equal slot ranges (one per master of an N-master cluster)', () => {
    for (const [prefix, count] of [
      ['{cw}', 3],
      ['{cw}', 6],
      ['{cwtest-1234}', 3],
      ['{other}', 5],
    ] as const) {
      const width = CLUSTER_SLOTS / count;
      const ranges = partitionPrefixes(prefix, count).map((p) => Math.floor(slotOf(p) / width));
      expect(new Set(ranges).size).toBe(count);
    }
  });

  it('refuses a prefix without a hash tag, and counts out of range', () => {
    expect(() => partitionPrefixes('cw', 2)).toThrow(RangeError);
    expect(() => partitionPrefixes('{cw}', 0)).toThrow(RangeError);
    expect(() => partitionPrefixes('{cw}', 33)).toThrow(RangeError);
  });
});

describe('Partitions', () => {
  it('places a patient by its service id, the same way in every instance', () => {
    const a = new Partitions('{cw}', 3);
    const b = Partitions.of({ prefix: '{cw}', partitions: 3 });
    for (let i = 0; i < 50; i++) {
      const id = randomUUID();
      expect(a.prefixOf(id)).toBe(b.prefixOf(id));
      expect(a.prefixOf(id)).toBe(a.prefixes[a.indexOf(id)]);
    }
  });

  it('draws a new service id in the partition asked for', () => {
    const partitions = new Partitions('{cw}', 3);
    for (const index of [0, 1, 2]) {
      expect(partitions.indexOf(partitions.drawPatientId(index))).toBe(index);
    }
  });

  it('puts everything under the prefix with one partition', () => {
    const one = new Partitions('{cw}');
    expect(one.prefixOf(randomUUID())).toBe('{cw}');
    expect(one.base).toBe('{cw}');
    expect(() => one.prefixAt(1)).toThrow(RangeError);
  });
});
