import { describe, expect, it } from 'vitest';
import { RecordNotAssemblableError } from '../records/assemble-patient.ts';
import { IdentifierLeakError } from '../records/prepare-for-service.ts';
import type { ConcordanceJob } from '../service/create-service-client.ts';
import { ServiceAuthError } from '../service/errors/service-auth-error.ts';
import { ServiceBadResponseError } from '../service/errors/service-bad-response-error.ts';
import { ServiceError } from '../service/errors/service-error.ts';
import { ServiceNotFoundError } from '../service/errors/service-not-found-error.ts';
import { ServiceParamsError } from '../service/errors/service-params-error.ts';
import { ServiceRateLimitedError } from '../service/errors/service-rate-limited-error.ts';
import { ServiceRequestError } from '../service/errors/service-request-error.ts';
import { ServiceTimeoutError } from '../service/errors/service-timeout-error.ts';
import { ServiceUnavailableError } from '../service/errors/service-unavailable-error.ts';
import { ServiceValidationError } from '../service/errors/service-validation-error.ts';
import { decideSubmitFailure } from './query-lifecycle.ts';
import { RESULT_ERROR_CODES, type ResultErrorCode } from './result-error-codes.ts';
import { mayHaveReachedService, pollAnswerOf, submitFailureOf } from './service-answers.ts';

const POST = 'POST /v1/concordance';
const GET = 'GET /v1/concordance/{job_id}';
const ITEMS = [
  { loc: ['body', 'assembled_patient', 'age'], msg: 'Field required', type: 'missing' },
];

/** Sanitised got failures, as the transport attaches them (name, code, message only). */
const networkCause = (code: string) =>
  Object.assign(new Error(`connect ${code}`), { name: 'RequestError', code });

/** One real error of each kind the service client throws, as it throws them. */
const serviceErrors = (endpoint: string) => ({
  auth: new ServiceAuthError(`${endpoint} answered 401`, { status: 401, endpoint }),
  badResponse: new ServiceBadResponseError(`${endpoint} answered with a body that is not JSON`, {
    status: 200,
    endpoint,
  }),
  notFound: new ServiceNotFoundError(`${endpoint} answered 404: not found`, {
    status: 404,
    endpoint,
  }),
  params: new ServiceParamsError('the job id is empty', { endpoint }),
  rateLimited: new ServiceRateLimitedError(`${endpoint} answered 429`, { status: 429, endpoint }),
  rateLimitedAfter: new ServiceRateLimitedError(`${endpoint} answered 429`, {
    status: 429,
    endpoint,
    retryAfterMs: 7_000,
  }),
  request: new ServiceRequestError(`${endpoint} answered 413: request rejected`, {
    status: 413,
    endpoint,
  }),
  timeout: new ServiceTimeoutError(`${endpoint} got no response within 10000 ms`, {
    endpoint,
    cause: Object.assign(networkCause('ETIMEDOUT'), { name: 'TimeoutError' }),
  }),
  unavailable: new ServiceUnavailableError(`${endpoint} answered 503: service unavailable`, {
    status: 503,
    endpoint,
  }),
  reset: new ServiceUnavailableError(`${endpoint} could not be reached (ECONNRESET)`, {
    endpoint,
    cause: networkCause('ECONNRESET'),
  }),
  validation: new ServiceValidationError(`${endpoint} answered 422: validation failed`, {
    status: 422,
    endpoint,
    items: ITEMS,
  }),
});

/** Errors that are none of the service's nor the record's. */
const FOREIGN: unknown[] = [
  new Error('boom'),
  new TypeError('x is undefined'),
  Object.assign(new Error('no'), { code: 'ERR_SERVICE_TIMEOUT' }),
  'a string',
  undefined,
  null,
];

const job = (job: Partial<ConcordanceJob> & Pick<ConcordanceJob, 'state'>): ConcordanceJob => ({
  status: job.state,
  concordance: null,
  raw: {},
  ...job,
});

describe('pollAnswerOf (a GET of the remote job)', () => {
  const concordance = { concordant: false, reasons: ['dose'] };

  it("reads the job's state", () => {
    expect(pollAnswerOf(job({ state: 'success', status: 'done', concordance }), false)).toEqual({
      kind: 'success',
      concordance,
    });
    expect(
      pollAnswerOf(job({ state: 'failure', status: 'cancelled', concordance }), false),
    ).toEqual({ kind: 'failure', status: 'cancelled', concordance });
    expect(pollAnswerOf(job({ state: 'failure', status: 'error' }), false)).toEqual({
      kind: 'failure',
      status: 'error',
      concordance: null,
    });
    expect(pollAnswerOf(job({ state: 'lost', status: 'expired' }), false)).toEqual({
      kind: 'lost',
    });
    expect(pollAnswerOf(job({ state: 'pending', status: 'running' }), false)).toEqual({
      kind: 'pending',
    });
    expect(pollAnswerOf(job({ state: 'pending', retryAfterMs: 3_000 }), false)).toEqual({
      kind: 'pending',
      retryAfterMs: 3_000,
    });
  });

  it('maps each service error onto what the lifecycle expects of a poll', () => {
    const e = serviceErrors(GET);
    expect(pollAnswerOf(e.notFound, true)).toEqual({ kind: 'lost' });
    expect(pollAnswerOf(e.rateLimited, true)).toEqual({ kind: 'rate_limited' });
    expect(pollAnswerOf(e.rateLimitedAfter, true)).toEqual({
      kind: 'rate_limited',
      retryAfterMs: 7_000,
    });
    expect(pollAnswerOf(e.auth, true)).toEqual({ kind: 'auth_refused' });
    for (const err of [e.unavailable, e.reset, e.timeout, e.badResponse, e.request, e.params]) {
      expect(pollAnswerOf(err, true)).toEqual({ kind: 'error' });
    }
    expect(pollAnswerOf(e.validation, true)).toEqual({ kind: 'error' });
  });

  it("leaves errors that are not the service client's unclassified", () => {
    for (const err of [...FOREIGN, new IdentifierLeakError()]) {
      expect(pollAnswerOf(err, true)).toBeUndefined();
    }
  });
});

describe('submitFailureOf (a submission and its preparation)', () => {
  const e = serviceErrors(POST);

  it('makes a record without a birth date wait, and refuses other unassemblable records', () => {
    expect(submitFailureOf(new RecordNotAssemblableError('birth_date_missing'))).toEqual({
      kind: 'birth_date_missing',
    });
    for (const reason of ['birth_date_invalid', 'birth_date_in_future'] as const) {
      const err = new RecordNotAssemblableError(reason);
      expect(submitFailureOf(err)).toEqual({
        kind: 'refused',
        code: 'ERR_RECORD_NOT_ASSEMBLABLE',
        message: err.message,
      });
    }
  });

  it('refuses a record that would leak an identifier', () => {
    const err = new IdentifierLeakError('known identifier');
    expect(submitFailureOf(err)).toEqual({
      kind: 'refused',
      code: 'ERR_IDENTIFIER_LEAK',
      message: err.message,
    });
  });

  it("refuses a 422 with the service's items", () => {
    expect(submitFailureOf(e.validation)).toEqual({
      kind: 'refused',
      code: 'ERR_SERVICE_VALIDATION',
      message: e.validation.message,
      items: ITEMS,
    });
  });

  it('holds on a 429 (with its Retry-After) and on a refused key', () => {
    expect(submitFailureOf(e.rateLimited)).toEqual({ kind: 'rate_limited' });
    expect(submitFailureOf(e.rateLimitedAfter)).toEqual({
      kind: 'rate_limited',
      retryAfterMs: 7_000,
    });
    expect(submitFailureOf(e.auth)).toEqual({ kind: 'auth_refused' });
  });

  it('retries 5xx, lost connections and timeouts under their codes', () => {
    for (const err of [e.unavailable, e.reset, e.timeout]) {
      expect(submitFailureOf(err)).toEqual({
        kind: 'transient',
        code: err.code,
        message: err.message,
      });
    }
    expect(submitFailureOf(e.timeout)).toMatchObject({ code: 'ERR_SERVICE_TIMEOUT' });
    expect(submitFailureOf(e.reset)).toMatchObject({ code: 'ERR_SERVICE_UNAVAILABLE' });
  });

  it('gives up at once on answers that sending again would not change', () => {
    const permanent = [
      [e.request, 'ERR_SERVICE_REQUEST'],
      [e.badResponse, 'ERR_SERVICE_BAD_RESPONSE'],
      [e.notFound, 'ERR_SERVICE_NOT_FOUND'],
      [e.params, 'ERR_SERVICE_PARAMS'],
    ] as const;
    for (const [err, code] of permanent) {
      expect(submitFailureOf(err)).toEqual({ kind: 'permanent', code, message: err.message });
    }
  });

  it('gives a service error without a result code ERR_QUERY_INTERNAL', () => {
    class ServiceNewError extends ServiceError {
      readonly code = 'ERR_SERVICE_NEW';
    }
    const err = new ServiceNewError('a kind of failure added later');
    expect(submitFailureOf(err)).toEqual({
      kind: 'permanent',
      code: 'ERR_QUERY_INTERNAL',
      message: 'a kind of failure added later',
    });
  });

  it('leaves errors nobody expected unclassified', () => {
    for (const err of FOREIGN) expect(submitFailureOf(err)).toBeUndefined();
  });

  it('ends every submission error, at the last attempt, as the result-code contract says', () => {
    const errors = [
      ...Object.values(e),
      new RecordNotAssemblableError('birth_date_invalid'),
      new IdentifierLeakError(),
    ];
    const ends = errors.flatMap((err) => {
      const failure = submitFailureOf(err);
      if (failure === undefined) throw new Error(`${String(err)} is not classified`);
      const decision = decideSubmitFailure(failure, 3, { submitAttempts: 3, authPauseMs: 1 }, 0);
      return decision.kind === 'end' ? [decision] : [];
    });
    expect(ends).toHaveLength(errors.length - 3); // the 429s and the 401 hold
    for (const decision of ends) {
      const code = decision.failure?.code as ResultErrorCode;
      expect(decision.outcome).toBe(RESULT_ERROR_CODES[code]);
    }
  });
});

describe('mayHaveReachedService', () => {
  const e = serviceErrors(POST);

  it('is false for any answer of the service (a status)', () => {
    for (const err of Object.values(e).filter((err) => err.status !== undefined)) {
      expect(mayHaveReachedService(err)).toBe(false);
    }
  });

  it('is true for a timeout and a connection lost without an answer', () => {
    expect(mayHaveReachedService(e.timeout)).toBe(true);
    expect(mayHaveReachedService(e.reset)).toBe(true);
    const bare = new ServiceUnavailableError(`${POST} could not be reached`, { endpoint: POST });
    expect(mayHaveReachedService(bare)).toBe(true);
  });

  it('is false when the connection was never made', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']) {
      const err = new ServiceUnavailableError(`${POST} could not be reached (${code})`, {
        endpoint: POST,
        cause: networkCause(code),
      });
      expect(mayHaveReachedService(err)).toBe(false);
    }
  });

  it('is false for arguments refused before sending, and for errors not of the service', () => {
    expect(mayHaveReachedService(e.params)).toBe(false);
    for (const err of FOREIGN) expect(mayHaveReachedService(err)).toBe(false);
  });
});
