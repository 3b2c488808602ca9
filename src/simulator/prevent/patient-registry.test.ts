import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PatientRegistry } from './patient-registry.ts';

describe('PatientRegistry', () => {
  it('creates an id once per identifier and returns it again after', () => {
    const registry = new PatientRegistry(1);
    const first = registry.register('MRN-0001');
    expect(first.created).toBe(true);
    expect(registry.register('MRN-0001')).toEqual({ id: first.id, created: false });
    const other = registry.register('MRN-0002');
    expect(other.created).toBe(true);
    expect(other.id).not.toBe(first.id);
    expect(registry.has(first.id)).toBe(true);
    expect(registry.has('unknown')).toBe(false);
    expect(registry.size).toBe(2);
  });

  it('hands out the same ids in the same order for the same seed', () => {
    const a = new PatientRegistry(5);
    const b = new PatientRegistry(5);
    expect(a.register('x').id).toBe(b.register('y').id);
  });

  it('shows no identifier when inspected', () => {
    const registry = new PatientRegistry(1);
    registry.register('MRN-SECRET-42');
    expect(inspect(registry, { showHidden: true, depth: 5 })).not.toContain('MRN-SECRET-42');
    expect(JSON.stringify(registry)).not.toContain('MRN-SECRET-42');
  });
});
