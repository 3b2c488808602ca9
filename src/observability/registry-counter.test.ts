import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registryCounter } from './registry-counter.ts';

describe('registryCounter', () => {
  it('registers a new counter, and hands back the same one when asked again on that registry', async () => {
    const registry = new Registry();
    const first = registryCounter(registry, 'cw_test_total', 'A test counter.', ['kind']);
    const second = registryCounter(registry, 'cw_test_total', 'Another help.', ['kind']);
    expect(second).toBe(first);
    first.inc({ kind: 'a' });
    second.inc({ kind: 'a' });
    const metric = await registry.getSingleMetric('cw_test_total')?.get();
    expect(metric?.help).toBe('A test counter.');
    expect(metric?.values).toEqual([{ labels: { kind: 'a' }, value: 2 }]);
  });

  it('makes a counter without labels, and one of its own on another registry', () => {
    const one = registryCounter(new Registry(), 'cw_plain_total', 'Plain.');
    const other = registryCounter(new Registry(), 'cw_plain_total', 'Plain.');
    expect(one).toBeInstanceOf(Counter);
    expect(other).not.toBe(one);
  });

  it('registers a new counter beside a metric of that name that is not a counter (the registry refuses it)', () => {
    const registry = new Registry();
    new Gauge({ name: 'cw_gauge_total', help: 'A gauge.', registers: [registry] });
    expect(() => registryCounter(registry, 'cw_gauge_total', 'A counter.')).toThrow();
  });
});
