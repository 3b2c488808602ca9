import { describe, expect, it } from 'vitest';
import { errorFromResponse, type FailedResponse } from './error-from-response.ts';
import { ServiceAuthError } from './errors/service-auth-error.ts';
import { ServiceBadResponseError } from './errors/service-bad-response-error.ts';
import { ServiceNotFoundError } from './errors/service-not-found-error.ts';
import { ServiceRateLimitedError } from './errors/service-rate-limited-error.ts';
import { ServiceRequestError } from './errors/service-request-error.ts';
import { ServiceUnavailableError } from './errors/service-unavailable-error.ts';
import { ServiceValidationError } from './errors/service-validation-error.ts';

const base: FailedResponse = {
  status: 500,
  retryAfterMs: undefined,
  body: '',
  requestId: 'req-1',
  endpoint: 'GET /v1/relationships/{relationship_id}',
};
const from = (over: Partial<FailedResponse>) => errorFromResponse({ ...base, ...over });

describe('errorFromResponse', () => {
  it.each([
    [401, ServiceAuthError, 'ERR_SERVICE_AUTH'],
    [403, ServiceAuthError, 'ERR_SERVICE_AUTH'],
    [404, ServiceNotFoundError, 'ERR_SERVICE_NOT_FOUND'],
    [422, ServiceValidationError, 'ERR_SERVICE_VALIDATION'],
    [429, ServiceRateLimitedError, 'ERR_SERVICE_RATE_LIMITED'],
    [500, ServiceUnavailableError, 'ERR_SERVICE_UNAVAILABLE'],
    [503, ServiceUnavailableError, 'ERR_SERVICE_UNAVAILABLE'],
    [400, ServiceRequestError, 'ERR_SERVICE_REQUEST'],
    [413, ServiceRequestError, 'ERR_SERVICE_REQUEST'],
    [415, ServiceRequestError, 'ERR_SERVICE_REQUEST'],
    [302, ServiceBadResponseError, 'ERR_SERVICE_BAD_RESPONSE'],
  ] as const)('maps %i to %o', (status, type, code) => {
    const error = from({ status });
    expect(error).toBeInstanceOf(type);
    expect(error.code).toBe(code);
    expect(error.status).toBe(status);
    expect(error.requestId).toBe('req-1');
    expect(error.endpoint).toBe(base.endpoint);
  });

  it('keeps loc, msg and type of 422 items and drops the echoed input', () => {
    const body = JSON.stringify({
      detail: [
        { loc: ['query', 'limit'], msg: 'too small', type: 'too_small', input: 'PATIENT-SECRET' },
      ],
    });
    const error = from({ status: 422, body }) as ServiceValidationError;
    expect(error.items).toEqual([{ loc: ['query', 'limit'], msg: 'too small', type: 'too_small' }]);
    expect(error.message).toContain('query.limit');
    expect(JSON.stringify(error)).not.toContain('PATIENT-SECRET');
  });

  it('gives an empty item list for an unreadable 422 body', () => {
    expect((from({ status: 422, body: '<html>' }) as ServiceValidationError).items).toEqual([]);
    expect(
      (from({ status: 422, body: '{"detail":"no"}' }) as ServiceValidationError).items,
    ).toEqual([]);
  });

  it('carries Retry-After on 429', () => {
    const error = from({ status: 429, retryAfterMs: 2000 }) as ServiceRateLimitedError;
    expect(error.retryAfterMs).toBe(2000);
    expect(error.toJSON()).toMatchObject({ code: 'ERR_SERVICE_RATE_LIMITED', retryAfterMs: 2000 });
  });

  it('never copies the body into the message or JSON', () => {
    for (const status of [400, 401, 404, 429, 500, 302]) {
      const error = from({ status, body: '{"detail":"PATIENT-SECRET"}' });
      expect(error.message).not.toContain('PATIENT-SECRET');
      expect(JSON.stringify(error)).not.toContain('PATIENT-SECRET');
    }
  });
});
