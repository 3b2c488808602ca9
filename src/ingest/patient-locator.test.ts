import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import { Crosswalk } from '../identity/crosswalk.ts';
import { Partitions } from '../queues/partitions.ts';
import { PatientLocator, type CacheOutcome } from './patient-locator.ts';

describe('PatientLocator (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let crosswalk: Crosswalk;
  let outcomes: CacheOutcome[];
  const locator = (maxEntries: number) =>
    new PatientLocator({ crosswalk, maxEntries, onLookup: (o) => outcomes.push(o) });

  beforeEach(async () => {
    env = await isolatedRedis();
    crosswalk = new Crosswalk({
      redis: env.redis,
      prefix: env.prefix,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    });
    outcomes = [];
  });
  afterEach(() => env.cleanup());

  it('plans an unknown patient, and once confirmed answers it from the cache, to be verified', async () => {
    const l = locator(10);
    const first = await l.locate('MRN-1');
    expect(first).toMatchObject({ kind: 'new' });
    if (first.kind !== 'new') throw new Error('unreachable');
    expect(first.plan.forwardKey).toBe(crosswalk.lookupKeyOf('MRN-1'));
    l.confirm(first);
    expect(await l.locate('MRN-1')).toEqual({
      kind: 'known',
      patientServiceId: first.patientServiceId,
      verify: {
        lookupKey: crosswalk.lookupKeyOf('MRN-1'),
        retiredKey: crosswalk.retiredKeyOf(first.patientServiceId),
      },
      cached: true,
    });
    expect(outcomes).toEqual(['miss', 'hit']);
    // Keyed by the HMAC of the id, never the id.
    expect(l.size).toBe(1);
  });

  it('looks up a patient it does not hold (one HGET), to be verified, and caches it once confirmed', async () => {
    const { patientServiceId } = await crosswalk.resolve('MRN-2');
    const l = locator(10);
    const found = await l.locate('MRN-2');
    expect(found).toEqual({
      kind: 'known',
      patientServiceId,
      verify: {
        lookupKey: crosswalk.lookupKeyOf('MRN-2'),
        retiredKey: crosswalk.retiredKeyOf(patientServiceId),
      },
      cached: false,
    });
    expect(l.size).toBe(0);
    l.confirm(found);
    expect(await l.locate('MRN-2')).toMatchObject({ cached: true, patientServiceId });
    // A stale answer for a cached id drops it (and counts it); the next one is looked up again.
    const cached = await l.locate('MRN-2');
    l.forget(cached);
    expect(l.size).toBe(0);
    expect(await l.locate('MRN-2')).toMatchObject({ cached: false, patientServiceId });
    expect(outcomes).toEqual(['miss', 'hit', 'hit', 'stale', 'miss']);
  });

  it('keeps at most maxEntries ids, dropping the least recently used; 0 keeps none', async () => {
    const l = locator(2);
    for (const id of ['A', 'B', 'C']) l.confirm(await l.locate(id));
    expect(l.size).toBe(2);
    expect(await l.locate('A')).toMatchObject({ kind: 'new' });
    expect(await l.locate('C')).toMatchObject({ cached: true });

    const off = locator(0);
    const seen = await off.locate('A');
    off.confirm(seen);
    expect(off.size).toBe(0);
    expect(await off.locate('A')).toMatchObject({ kind: 'new' });
  });

  it('follows merges to the survivor when asked, unverified and uncached', async () => {
    const prior = (await crosswalk.resolve('MRN-OLD')).patientServiceId;
    const survivor = (await crosswalk.resolve('MRN-NEW')).patientServiceId;
    await env.redis.set(crosswalk.retiredKeyOf(prior), survivor);
    const l = locator(10);
    const found = await l.locate('MRN-OLD', { followMerges: true });
    expect(found).toEqual({ kind: 'known', patientServiceId: survivor, cached: false });
    l.confirm(found);
    expect(l.size).toBe(0);
    expect(await l.locate('MRN-UNSEEN', { followMerges: true })).toMatchObject({ kind: 'new' });
  });

  it('never verifies (nor caches) an entry left in another partition than its patient', async () => {
    const partitions = new Partitions(env.prefix, 3);
    crosswalk = new Crosswalk({
      redis: env.redis,
      prefix: partitions,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    });
    const lookupKey = crosswalk.lookupKeyOf('MRN-MOVED');
    const lookupPartition = partitions.indexOfLookup(
      lookupKey.slice(lookupKey.lastIndexOf(':') + 1),
    );
    const elsewhere = partitions.drawPatientId((lookupPartition + 1) % 3);
    await env.redis.hset(lookupKey, 'psid', elsewhere);
    const l = locator(10);
    const found = await l.locate('MRN-MOVED');
    expect(found).toEqual({ kind: 'known', patientServiceId: elsewhere, cached: false });
    l.confirm(found);
    expect(l.size).toBe(0);
  });
});
