import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FaultyRedis } from '../../test/support/faulty-redis.ts';
import { isolatedRedis } from '../../test/support/redis.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from './crosswalk-keys.ts';
import { Crosswalk } from './crosswalk.ts';

describe('Crosswalk (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let crosswalk: Crosswalk;

  beforeEach(async () => {
    env = await isolatedRedis();
    crosswalk = new Crosswalk({
      redis: env.redis,
      prefix: env.prefix,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    });
  });
  afterEach(() => env.cleanup());

  it('gives a local id one random service id, on first sight only', async () => {
    const first = await crosswalk.resolve('MRN-PLANTED-42');
    expect(first.created).toBe(true);
    expect(first.patientServiceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await crosswalk.resolve('MRN-PLANTED-42')).toEqual({
      patientServiceId: first.patientServiceId,
      created: false,
    });
    expect(await crosswalk.find('MRN-PLANTED-42')).toBe(first.patientServiceId);
    expect(await crosswalk.find('MRN-OTHER')).toBeUndefined();
    expect(await crosswalk.localIdOf(first.patientServiceId)).toBe('MRN-PLANTED-42');
  });

  it('removes an entry (both keys); a later resolve makes a new service id', async () => {
    const { patientServiceId } = await crosswalk.resolve('MRN-PLANTED-42');
    const other = await crosswalk.resolve('MRN-OTHER');
    expect(await crosswalk.remove('MRN-PLANTED-42')).toBe(patientServiceId);
    expect(await crosswalk.find('MRN-PLANTED-42')).toBeUndefined();
    expect(await crosswalk.localIdOf(patientServiceId)).toBeUndefined();
    expect(await env.redis.keys(`${env.prefix}:xw*`)).toHaveLength(2);
    expect(await crosswalk.remove('MRN-PLANTED-42')).toBeUndefined();
    expect(await crosswalk.find('MRN-OTHER')).toBe(other.patientServiceId);
    const again = await crosswalk.resolve('MRN-PLANTED-42');
    expect(again.created).toBe(true);
    expect(again.patientServiceId).not.toBe(patientServiceId);
  });

  it('agrees on one service id when many callers resolve at once', async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, () => crosswalk.resolve('MRN-RACE')));
    expect(new Set(ids.map((r) => r.patientServiceId)).size).toBe(1);
    expect(ids.filter((r) => r.created)).toHaveLength(1);
  });

  it('never stores the local id in the clear', async () => {
    await crosswalk.resolve('MRN-PLANTED-42');
    const keys = await env.redis.keys(`${env.prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(key).not.toContain('MRN-PLANTED-42');
      const type = await env.redis.type(key);
      const dump =
        type === 'hash' ? JSON.stringify(await env.redis.hgetall(key)) : await env.redis.get(key);
      expect(dump).not.toContain('MRN-PLANTED-42');
    }
  });

  it('maps FHIR references to stable opaque ids and back', async () => {
    const { patientServiceId } = await crosswalk.resolve('MRN-1');
    const opaque = await crosswalk.opaqueFhirId(patientServiceId, 'Condition/abc');
    expect(opaque).toMatch(/^ref-/);
    expect(opaque).not.toContain('abc');
    expect(await crosswalk.opaqueFhirId(patientServiceId, 'Condition/abc')).toBe(opaque);
    expect(await crosswalk.fhirIdOf(patientServiceId, opaque)).toBe('Condition/abc');
    expect(await crosswalk.fhirIdOf(patientServiceId, 'ref-unknown')).toBeUndefined();
  });

  it('stores an opaque id once per process: a repeated id costs no Redis command', async () => {
    const counted = new FaultyRedis(env.redis);
    const keys = deriveCrosswalkKeys(generateCrosswalkSecret());
    const one = new Crosswalk({ redis: counted.client, prefix: env.prefix, keys });
    const { patientServiceId } = await one.resolve('MRN-1');
    counted.reset();
    const opaque = await one.opaqueFhirId(patientServiceId, 'Condition/abc');
    expect(counted.count).toBe(1);
    expect(await one.opaqueFhirId(patientServiceId, 'Condition/abc')).toBe(opaque);
    expect(counted.count).toBe(1);
    // Another process with the same key derives the same id, and finds it stored.
    const other = new Crosswalk({ redis: env.redis, prefix: env.prefix, keys });
    expect(await other.opaqueFhirId(patientServiceId, 'Condition/abc')).toBe(opaque);
    expect(await other.fhirIdOf(patientServiceId, opaque)).toBe('Condition/abc');
  });

  it('keeps the Prevent id beside the service id, sealed, until the entry goes', async () => {
    const { patientServiceId } = await crosswalk.resolve('MRN-PLANTED-42');
    expect(await crosswalk.preventPatientIdOf('MRN-PLANTED-42', patientServiceId)).toBeUndefined();
    expect(
      await crosswalk.keepPreventPatientId('MRN-PLANTED-42', patientServiceId, 'PREVENT-ID-777'),
    ).toBe(true);
    expect(await crosswalk.preventPatientIdOf('MRN-PLANTED-42', patientServiceId)).toBe(
      'PREVENT-ID-777',
    );
    // Our own service id and the service's Prevent id stay apart, and neither is in the clear.
    const entry = await env.redis.hgetall(crosswalk.lookupKeyOf('MRN-PLANTED-42'));
    expect(entry.psid).toBe(patientServiceId);
    expect(Object.keys(entry).sort()).toEqual(['local', 'prevent_patient_id', 'psid']);
    expect(JSON.stringify(entry)).not.toContain('PREVENT-ID-777');
    // Asked for another service id (a purge re-created the patient): nothing, and nothing kept.
    expect(await crosswalk.preventPatientIdOf('MRN-PLANTED-42', 'another-psid')).toBeUndefined();
    expect(await crosswalk.keepPreventPatientId('MRN-PLANTED-42', 'another-psid', 'X')).toBe(false);
    // A purge removes it with the entry: a new patient has to register again.
    await crosswalk.remove('MRN-PLANTED-42');
    const again = await crosswalk.resolve('MRN-PLANTED-42');
    expect(
      await crosswalk.preventPatientIdOf('MRN-PLANTED-42', again.patientServiceId),
    ).toBeUndefined();
  });
});
