import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedRedis } from '../../test/support/redis.ts';
import { deriveCrosswalkKeys, generateCrosswalkSecret } from '../identity/crosswalk-keys.ts';
import type { AssembledPatient } from '../interface/assembled-patient.ts';
import { RecordStore } from './record-store.ts';

const record = (marker: string): AssembledPatient => ({
  nodes: [
    {
      id: 'n1',
      node_type: 'condition',
      notable: true,
      service_preferred_name: marker,
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
    },
  ],
  relationships: [],
  demographics: { age: 54, gender: 'female' },
});

describe('RecordStore (real Redis)', () => {
  let env: Awaited<ReturnType<typeof isolatedRedis>>;
  let store: RecordStore;

  beforeEach(async () => {
    env = await isolatedRedis();
    store = new RecordStore({
      redis: env.redis,
      prefix: env.prefix,
      keys: deriveCrosswalkKeys(generateCrosswalkSecret()),
    });
  });
  afterEach(() => env.cleanup());

  it('raises the version on every put and returns the newest record', async () => {
    expect(await store.get('p1')).toBeUndefined();
    expect(await store.version('p1')).toBe(0);
    expect(await store.put('p1', record('first'))).toBe(1);
    expect(await store.put('p1', record('second'))).toBe(2);
    const stored = await store.get('p1');
    expect(stored?.version).toBe(2);
    expect(stored?.record?.nodes[0]?.service_preferred_name).toBe('second');
    expect(await store.version('p1')).toBe(2);
  });

  it('gives concurrent writers distinct versions', async () => {
    const versions = await Promise.all(
      Array.from({ length: 25 }, (_, i) => store.put('p2', record(`v${i}`))),
    );
    expect([...versions].sort((a, b) => a - b)).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  it('keeps the record sealed at rest', async () => {
    await store.put('p3', record('PLANTED-NAME-7'));
    const raw = await env.redis.hgetall(`${env.prefix}:rec:p3`);
    expect(JSON.stringify(raw)).not.toContain('PLANTED-NAME-7');
    expect(JSON.stringify(raw)).not.toContain('E11.9');
  });
});
