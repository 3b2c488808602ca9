import { describe, expect, it } from 'vitest';
import { FaultInjector } from './fault-injector.ts';

const kinds = (injector: FaultInjector, route: string | undefined, n: number) =>
  Array.from({ length: n }, () => injector.decide(route).action.kind);

describe('FaultInjector', () => {
  it('does nothing without a profile', () => {
    expect(kinds(new FaultInjector(1), 'GET /v1/relationships', 5)).toEqual(Array(5).fill('none'));
  });

  it('applies a rule with `times` to the next N matching requests only', () => {
    const injector = new FaultInjector(1, {
      routes: { 'POST /v1/concordance': { error_rate: 1, error_status: 502, times: 2 } },
    });
    expect(kinds(injector, 'GET /v1/relationships', 2)).toEqual(['none', 'none']);
    expect(kinds(injector, 'POST /v1/concordance', 4)).toEqual(['error', 'error', 'none', 'none']);
    injector.replace(injector.profile);
    expect(injector.decide('POST /v1/concordance').action).toEqual({ kind: 'error', status: 502 });
  });

  it('prefers the route rule and falls back to "*" once it is used up', () => {
    const injector = new FaultInjector(1, {
      routes: {
        'GET /v1/relationships': { rate_limit_rate: 1, retry_after_s: 7, times: 1 },
        '*': { error_rate: 1 },
      },
    });
    expect(injector.decide('GET /v1/relationships').action).toEqual({
      kind: 'rate_limit',
      retryAfterS: 7,
      format: 'seconds',
    });
    expect(injector.decide('GET /v1/relationships').action).toEqual({ kind: 'error', status: 503 });
    expect(injector.decide(undefined).action.kind).toBe('error');
  });

  it('ranks hang over rate limit over error over malformed, and adds latency to any', () => {
    const all = { hang_rate: 1, rate_limit_rate: 1, error_rate: 1, malformed_rate: 1 };
    const decide = (rule: object) =>
      new FaultInjector(1, { routes: { '*': { added_latency_ms: 5, ...rule } } }).decide('x');
    expect(decide(all)).toEqual({ delayMs: 5, action: { kind: 'hang' } });
    expect(decide({ ...all, hang_rate: 0 }).action.kind).toBe('rate_limit');
    expect(decide({ ...all, hang_rate: 0, rate_limit_rate: 0 }).action.kind).toBe('error');
    expect(decide({ malformed_rate: 1 }).action).toEqual({
      kind: 'malformed',
      body: 'invalid_json',
    });
    expect(decide({})).toEqual({ delayMs: 5, action: { kind: 'none' } });
  });

  it('hits a fractional rate about that often, the same way for the same seed', () => {
    const profile = { routes: { '*': { error_rate: 0.3 } } };
    const a = kinds(new FaultInjector(9, profile), 'GET /healthz', 2000);
    const b = kinds(new FaultInjector(9, profile), 'GET /healthz', 2000);
    const c = kinds(new FaultInjector(10, profile), 'GET /healthz', 2000);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    const errors = a.filter((k) => k === 'error').length;
    expect(errors).toBeGreaterThan(500);
    expect(errors).toBeLessThan(700);
  });

  it('clears the profile', () => {
    const injector = new FaultInjector(1, { routes: { '*': { error_rate: 1 } } });
    injector.clear();
    expect(injector.profile).toEqual({});
    expect(injector.decide('x').action.kind).toBe('none');
  });
});
