import { describe, expect, it } from 'vitest';
import { FaultProfileSchema } from './fault-profile.ts';

describe('FaultProfileSchema', () => {
  it('accepts the documented shape', () => {
    const profile = {
      latency: { min_ms: 0, max_ms: 50 },
      routes: {
        'POST /v1/concordance': { error_rate: 1, error_status: 503, times: 2 },
        'GET /v1/concordance/:job_id': {
          rate_limit_rate: 0.1,
          retry_after_s: 2,
          retry_after_format: 'http-date',
        },
        '*': {
          added_latency_ms: 20,
          hang_rate: 0.01,
          malformed_rate: 0.1,
          malformed_body: 'wrong_shape',
        },
      },
      job_loss_rate: 0.1,
      job_failure_rate: 0.1,
      never_finish_rate: 0.1,
    };
    expect(FaultProfileSchema.parse(profile)).toEqual(profile);
    expect(FaultProfileSchema.parse({})).toEqual({});
  });

  it('rejects a route key that names no service route, naming the key', () => {
    const result = FaultProfileSchema.safeParse({
      routes: { 'GET /v1/unknown': { error_rate: 1 } },
    });
    expect(result.error?.issues).toMatchObject([
      { path: ['routes'], message: expect.stringContaining('GET /v1/unknown') },
    ]);
  });

  it.each([
    [{ routes: { '*': { error_rate: 1.5 } } }, ['routes', '*', 'error_rate']],
    [{ routes: { '*': { error_status: 504 } } }, ['routes', '*', 'error_status']],
    [{ routes: { '*': { times: 0 } } }, ['routes', '*', 'times']],
    [{ routes: { '*': { eror_rate: 1 } } }, ['routes', '*']],
    [{ latency: { min_ms: 10, max_ms: 5 } }, ['latency', 'max_ms']],
    [{ job_loss_rate: 0.6, job_failure_rate: 0.6 }, []],
    [{ unknown_key: true }, []],
  ])('rejects %j at %j', (profile, path) => {
    const result = FaultProfileSchema.safeParse(profile);
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path)).toContainEqual(path);
  });
});
