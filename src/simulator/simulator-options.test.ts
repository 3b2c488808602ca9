import { describe, expect, it } from 'vitest';
import { resolveSimulatorOptions } from './simulator-options.ts';

describe('resolveSimulatorOptions', () => {
  it('applies the documented defaults', () => {
    const o = resolveSimulatorOptions({ apiKeys: ['k1', 'k2'] });
    expect(o).toMatchObject({
      port: 8090,
      host: '127.0.0.1',
      apiKeys: ['k1', 'k2'],
      adminKey: 'k1',
      seed: 1,
      faults: {},
      latency: { minMs: 1000, maxMs: 4000 },
      requestLogSize: 10_000,
      relationshipCount: 5_000,
      maxListLimit: 1_000,
      bodyLimitBytes: 5 * 1024 * 1024,
      logger: false,
      jobTtlMs: 3_600_000,
    });
    expect(o.now).toBe(Date.now);
  });

  it.each([
    [{ apiKeys: [] }, /apiKeys/],
    [{ apiKeys: [''] }, /apiKeys/],
    [{ apiKeys: ['k'], port: 70_000 }, /port/],
    [{ apiKeys: ['k'], latency: { minMs: 10, maxMs: 5 } }, /latency\.maxMs/],
    [{ apiKeys: ['k'], relationshipCount: 0 }, /relationshipCount/],
    [{ apiKeys: ['k'], maxListLimit: 0 }, /maxListLimit/],
    [{ apiKeys: ['k'], requestLogSize: 1.5 }, /requestLogSize/],
    [{ apiKeys: ['k'], adminKey: '' }, /adminKey/],
  ])('rejects %j', (options, message) => {
    expect(() => resolveSimulatorOptions(options)).toThrow(message);
  });

  it('validates the initial fault profile', () => {
    expect(() =>
      resolveSimulatorOptions({ apiKeys: ['k'], faults: { job_loss_rate: 2 } }),
    ).toThrow();
  });
});
