import { describe, expect, it } from 'vitest';
import { LatencyProfiles, type LatencySource } from './latency-profiles.ts';

/** Latencies kept in memory per category, counting the reads. */
class MemorySource implements LatencySource {
  readonly reads: string[] = [];
  readonly byCategory: Record<string, number[]>;

  constructor(byCategory: Record<string, number[]>) {
    this.byCategory = byCategory;
  }

  latencies(category: string): Promise<number[]> {
    this.reads.push(category);
    return Promise.resolve([...(this.byCategory[category] ?? [])]);
  }
}

const SIXTY = [60_000, 58_000, 62_000, 55_000, 65_000];
const TEN = [10_000, 9_000, 11_000, 12_000, 8_000];

function setup(refreshMs?: number) {
  const clock = { now: 1_000_000 };
  const source = new MemorySource({ END002: SIXTY, CIR007: TEN, NEW001: [1_000] });
  const profiles = new LatencyProfiles({
    source,
    now: () => clock.now,
    ...(refreshMs === undefined ? {} : { refreshMs }),
  });
  return { clock, source, profiles };
}

describe('LatencyProfiles', () => {
  it('knows no profile before a refresh has read one', async () => {
    const { source, profiles } = setup();
    expect(profiles.get('END002')).toBeUndefined();
    expect(source.reads).toEqual([]);
    await profiles.refresh(['END002']);
    expect(profiles.get('END002')).toEqual({ low: 55_000, high: 65_000, samples: 5 });
    expect(profiles.get('CIR007')).toBeUndefined();
  });

  it('reads each category once per refresh, however often it is named', async () => {
    const { source, profiles } = setup();
    await profiles.refresh(['END002', 'CIR007', 'END002', 'END002']);
    expect(source.reads.toSorted()).toEqual(['CIR007', 'END002']);
    expect(profiles.get('CIR007')).toEqual({ low: 8_000, high: 12_000, samples: 5 });
  });

  it('reads again only the categories whose copy is refreshMs old (2 s by default)', async () => {
    const { clock, source, profiles } = setup();
    await profiles.refresh(['END002']);
    clock.now += 1_000;
    await profiles.refresh(['END002', 'CIR007']);
    expect(source.reads).toEqual(['END002', 'CIR007']);
    clock.now += 999;
    await profiles.refresh(['END002', 'CIR007']);
    expect(source.reads).toEqual(['END002', 'CIR007']);
    clock.now += 1;
    await profiles.refresh(['END002', 'CIR007']);
    expect(source.reads).toEqual(['END002', 'CIR007', 'END002']);
    clock.now += 1_000;
    await profiles.refresh(['END002', 'CIR007']);
    expect(source.reads).toEqual(['END002', 'CIR007', 'END002', 'CIR007']);
  });

  it('follows a configured refreshMs and picks up what the source learnt meanwhile', async () => {
    const { clock, source, profiles } = setup(10_000);
    await profiles.refresh(['END002']);
    source.byCategory.END002 = [...SIXTY, 90_000, 95_000, 100_000];
    clock.now += 9_999;
    await profiles.refresh(['END002']);
    expect(profiles.get('END002')).toEqual({ low: 55_000, high: 65_000, samples: 5 });
    clock.now += 1;
    await profiles.refresh(['END002']);
    expect(profiles.get('END002')).toEqual({ low: 55_000, high: 100_000, samples: 8 });
    expect(source.reads).toEqual(['END002', 'END002']);
  });

  it('remembers a category with too few latencies as read, without a profile', async () => {
    const { clock, source, profiles } = setup();
    await profiles.refresh(['NEW001']);
    expect(profiles.get('NEW001')).toBeUndefined();
    clock.now += 500;
    await profiles.refresh(['NEW001']);
    expect(source.reads).toEqual(['NEW001']);
  });

  it('reads nothing for no categories', async () => {
    const { source, profiles } = setup();
    await profiles.refresh([]);
    expect(source.reads).toEqual([]);
  });
});
